package dradriver_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"dralab.dev/drivers_under_test/dradriver"
	"dralab.dev/drivers_under_test/dradriver/frameworktest"
)

// slowCDI is the stub with a CDI write that takes cdiTime, timed as the reference drivers time theirs.
type slowCDI struct{ frameworktest.Stub }

const cdiTime = 30 * time.Millisecond

func (s slowCDI) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	_ = dradriver.Timed(ctx, dradriver.PhaseCDIWrite, func() error { time.Sleep(cdiTime); return nil })
	return s.Stub.PrepareResourceClaims(ctx, claims)
}

// prepareSums is dralab_driver_prepare_seconds' count and sum by phase.
func prepareSums(t *testing.T) (map[string]uint64, map[string]float64) {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts, sums := map[string]uint64{}, map[string]float64{}
	for _, f := range families {
		if f.GetName() != "dralab_driver_prepare_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			phase := m.GetLabel()[0].GetValue()
			counts[phase], sums[phase] = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
		}
	}
	return counts, sums
}

// Every NodePrepareResources call through the framework is split into phases that add up to
// its total, the driver's own phases where it timed them, the metadata write after it.
func TestPrepareIsSplitIntoPhases(t *testing.T) {
	c := frameworktest.Claim("c", "uid-timed", "gpu")
	n, _ := frameworktest.StartDriver(t, slowCDI{}, "", c)
	countsBefore, sumsBefore := prepareSums(t)
	n.Prepare(t, c)
	counts, sums := prepareSums(t)

	delta := func(phase string) float64 { return sums[phase] - sumsBefore[phase] }
	for _, phase := range []string{dradriver.PhaseTotal, dradriver.PhaseClaimReads, dradriver.PhaseCDIWrite,
		dradriver.PhaseDriverOther, dradriver.PhaseMetadataWrite} {
		if counts[phase]-countsBefore[phase] != 1 {
			t.Errorf("phase %s: %d observations for one call, want 1", phase, counts[phase]-countsBefore[phase])
		}
	}
	if got := delta(dradriver.PhaseCDIWrite); got < cdiTime.Seconds() || got > cdiTime.Seconds()+0.02 {
		t.Errorf("cdi_write %.4fs, want the %s the driver spent in it", got, cdiTime)
	}
	if delta(dradriver.PhaseMetadataWrite) <= 0 {
		t.Errorf("metadata_write %.6fs: the framework wrote a metadata file after the driver returned", delta(dradriver.PhaseMetadataWrite))
	}
	parts := delta(dradriver.PhaseClaimReads) + delta(dradriver.PhaseCDIWrite) + delta(dradriver.PhaseDriverOther) + delta(dradriver.PhaseMetadataWrite)
	if total := delta(dradriver.PhaseTotal); math.Abs(parts-total) > 1e-6 {
		t.Errorf("phases add up to %.6fs, total %.6fs", parts, total)
	}
}
