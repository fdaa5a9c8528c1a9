package nemesis

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

var killKind = Kind{Name: "kill", Needs: needsNodes("kill"), Targets: NodeTargets, Service: true,
	New: func(_ context.Context, e Env) Fault {
		return &Kill{Cluster: e.Cluster, Topology: e.Topology, Holders: e.Holders, Target: e.Target, RestartDelay: e.RestartDelay}
	},
}

// Kill SIGKILLs lock-service nodes and starts them again after
// RestartDelay, as a crash and a supervisor would. A Redis without
// persistence comes back empty: every lock it held is gone at once.
// antirez's advice for that case is a restart delay longer than the TTL.
type Kill struct {
	Cluster      Cluster
	Topology     Topology
	Holders      Holders
	Target       string // a NodeTargets value; "" is TargetRandom
	RestartDelay time.Duration

	mu     sync.Mutex
	killed map[string]bool
}

// Name implements Fault.
func (k *Kill) Name() string { return "kill" }

// Lasts implements Lasting: a killed node stays down for the restart delay.
func (k *Kill) Lasts(time.Duration) time.Duration { return k.RestartDelay }

// Inject implements Fault.
func (k *Kill) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	shape, targets, err := nodeShape(ctx, r, k.Topology, k.Holders, k.Target, nodeShapes)
	if err != nil {
		return Injection{}, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := hitEach(&k.killed, targets, func(t string) error { return k.Cluster.Signal(ctx, t, "SIGKILL") }); err != nil {
		return Injection{}, err
	}
	return Injection{Shape: shape, Targets: targets}, nil
}

// Heal implements Fault.
func (k *Kill) Heal(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return healEach(k.killed, func(n string) error { return k.Cluster.Restart(ctx, n) })
}
