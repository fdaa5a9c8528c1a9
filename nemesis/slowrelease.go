package nemesis

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/lockbench/lockbench/locks"
)

var slowReleaseKind = Kind{Name: SlowRelease, Outlived: true, Point: locks.FailBeforeDelete,
	Needs: needsLock(SlowRelease, "no release to delay"),
	New: func(_ context.Context, e Env) Fault {
		return &SlowReleaseFault{s: striker{cluster: e.Cluster, holders: e.Holders, clients: e.Topology.Clients, point: locks.FailBeforeDelete}}
	},
}

// SlowRelease is the fault's name.
const SlowRelease = "slow-release"

// SlowReleaseFault holds a holder's release for the fault's duration, at
// the moment the request that deletes its key is about to go out (after
// the ownership check of a client that checks in a separate round trip):
// the delayed unlock that lands after the lease expired and another client
// took the lock. The client's renewals have stopped by then, as they do
// when a release begins, so only a release that checks ownership in the
// same step as the delete is harmless.
type SlowReleaseFault struct {
	mu sync.Mutex
	s  striker
}

// Name implements Fault.
func (f *SlowReleaseFault) Name() string { return SlowRelease }

// Inject implements Fault.
func (f *SlowReleaseFault) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.s
	target, _, err := strikeOrHolder(ctx, &s, f.s.cluster, f.s.holders, f.s.clients, f.s.point)
	if err != nil {
		return Injection{}, err
	}
	return Injection{Shape: "delayed " + locks.FailBeforeDelete, Targets: []string{target}}, nil
}

// Heal implements Fault: the held release goes out.
func (f *SlowReleaseFault) Heal(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s.disarm(ctx)
}
