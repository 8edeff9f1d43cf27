package dradriver

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"google.golang.org/grpc"
)

// Where NodePrepareResources spends its time (PF-06), as the phases of dralab_driver_prepare_seconds. They add
// up to PhaseTotal: the kubelet's own histograms start at 100 ms and cannot split a call.
const (
	PhaseTotal = "total"
	// The framework reads the claims from the API server and waits for its serialization lock.
	PhaseClaimReads = "claim_reads"
	PhaseCDIWrite   = "cdi_write"
	PhaseAPIWrite   = "api_write"
	PhaseCheckpoint = "checkpoint"
	// The rest of the driver's PrepareResourceClaims (a --prepare-delay too).
	PhaseDriverOther = "driver_other"
	// From the driver's return to the answer: the framework writes the metadata files and
	// their CDI specs (building the answer takes microseconds).
	PhaseMetadataWrite = "metadata_write"
)

// Buckets from 0.5 ms to 16 s, doubling: KEP-5304's budget is 10 ms.
var buckets = prometheus.ExponentialBuckets(0.0005, 2, 16)

var (
	// prepareSeconds is NodePrepareResources measured inside the driver, by phase.
	prepareSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dralab_driver_prepare_seconds", Buckets: buckets,
		Help: "NodePrepareResources calls by phase (total, claim_reads, cdi_write, api_write, checkpoint, driver_other, metadata_write).",
	}, []string{"phase"})
	// networkAttachSeconds is the VF driver's RunPodSandbox work: netdev moves and their publishing.
	networkAttachSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "dralab_driver_network_attach_seconds", Buckets: buckets,
		Help: "Moving a pod's VFs into its network namespace and publishing them, per pod sandbox.",
	})
)

func init() { prometheus.MustRegister(prepareSeconds, networkAttachSeconds) }

// NetworkAttachTimer times a pod's network attach (the VF driver's RunPodSandbox).
func NetworkAttachTimer() *prometheus.Timer { return prometheus.NewTimer(networkAttachSeconds) }

// prepareClock collects one call's phases; the plugin and its helpers add to it through the context.
type prepareClock struct {
	mu       sync.Mutex
	start    time.Time
	returned time.Time // when the driver's PrepareResourceClaims returned
	phases   map[string]time.Duration
}

type clockKey struct{}

func (c *prepareClock) add(phase string, d time.Duration) {
	c.mu.Lock()
	c.phases[phase] += d
	c.mu.Unlock()
}

// Timed runs f as a phase of the NodePrepareResources call in ctx, if there is one.
func Timed(ctx context.Context, phase string, f func() error) error {
	c, _ := ctx.Value(clockKey{}).(*prepareClock)
	if c == nil {
		return f()
	}
	start := time.Now()
	err := f()
	c.add(phase, time.Since(start))
	return err
}

// timePrepare is a gRPC interceptor: it times each NodePrepareResources call and records its phases.
func timePrepare(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod != "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources" {
		return handler(ctx, req)
	}
	c := &prepareClock{start: time.Now(), phases: map[string]time.Duration{}}
	resp, err := handler(context.WithValue(ctx, clockKey{}, c), req)
	end := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.returned.IsZero() {
		c.phases[PhaseMetadataWrite] = end.Sub(c.returned)
	}
	c.phases[PhaseTotal] = end.Sub(c.start)
	for phase, d := range c.phases {
		prepareSeconds.WithLabelValues(phase).Observe(d.Seconds())
	}
	return resp, err
}

// timedPlugin splits the framework's part of a call from the driver's.
type timedPlugin struct{ kubeletplugin.DRAPlugin }

func (p timedPlugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	c, _ := ctx.Value(clockKey{}).(*prepareClock)
	if c == nil {
		return p.DRAPlugin.PrepareResourceClaims(ctx, claims)
	}
	begin := time.Now()
	c.add(PhaseClaimReads, begin.Sub(c.start))
	result, err := p.DRAPlugin.PrepareResourceClaims(ctx, claims)
	returned := time.Now()
	c.mu.Lock()
	var timed time.Duration // the phases the driver timed itself (Timed), whatever they are
	for phase, d := range c.phases {
		if phase != PhaseClaimReads {
			timed += d
		}
	}
	c.phases[PhaseDriverOther] = returned.Sub(begin) - timed
	c.returned = returned
	c.mu.Unlock()
	return result, err
}

// serveMetrics serves /metrics on addr until ctx ends; "" serves nothing.
func serveMetrics(ctx context.Context, addr string) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	server := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = server.Close()
	}()
	go func() {
		if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Metrics endpoint stopped", "address", addr)
		}
	}()
}
