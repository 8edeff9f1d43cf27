package dradriver

import (
	"context"
	"errors"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// preparer records when it was asked to prepare.
type preparer struct {
	Common
	called time.Time
}

func (p *preparer) PrepareResourceClaims(context.Context, []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	p.called = time.Now()
	return map[types.UID]kubeletplugin.PrepareResult{"uid": {}}, nil
}

func (p *preparer) UnprepareResourceClaims(context.Context, []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	return nil, nil
}

func TestSlowPrepareWaitsThenPrepares(t *testing.T) {
	p := &preparer{}
	start := time.Now()
	result, err := slowPrepare{DRAPlugin: p, delay: 200 * time.Millisecond}.PrepareResourceClaims(context.Background(), nil)
	if err != nil || len(result) != 1 {
		t.Fatalf("result %v, error %v", result, err)
	}
	if waited := p.called.Sub(start); waited < 200*time.Millisecond {
		t.Errorf("prepared after %s, want at least the delay", waited)
	}
}

// A call the kubelet has given up on ends at once, without preparing.
func TestSlowPrepareEndsWithTheKubeletsCall(t *testing.T) {
	p := &preparer{}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := slowPrepare{DRAPlugin: p, delay: time.Minute}.PrepareResourceClaims(ctx, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second || !p.called.IsZero() {
		t.Errorf("error %v after %s, prepared: %v", err, time.Since(start), !p.called.IsZero())
	}
}
