package nemesis

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockbench/lockbench/locks"
)

var replyLostKind = Kind{Name: ReplyLost, Point: locks.FailReplyHeld,
	Needs: needsLock(ReplyLost, "no request to lose the reply of"),
	New: func(_ context.Context, e Env) Fault {
		return &ReplyLostFault{s: striker{cluster: e.Cluster, holders: e.Holders, clients: e.Topology.Clients, point: locks.FailReplyHeld}}
	},
}

// ReplyLost is the fault's name.
const ReplyLost = "reply-lost"

// ReplyLostFault loses the reply to a request the lock service applied: it
// waits for a client to hold at the point where such a reply has reached
// its socket, proves from inside the client's container that it is held
// there, and lets it go on; the client then resets its connection without
// reading the reply, as when a link fails after the request was delivered.
// The request's effect stays on the service (in ZooKeeper's recipe, a
// sequential znode of the client's session) while the client cannot know
// it: ZOOKEEPER-1262, which Curator's protection mode answers. It needs
// no capability: the client drops its own connection.
type ReplyLostFault struct {
	mu sync.Mutex
	s  striker
}

// Name implements Fault.
func (f *ReplyLostFault) Name() string { return ReplyLost }

// Lasts implements Lasting: the reply is lost once the client goes on;
// what its request left on the service is what the run is there to see.
func (f *ReplyLostFault) Lasts(time.Duration) time.Duration { return 0 }

// Inject implements Fault.
func (f *ReplyLostFault) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.s
	target, shape, err := strikeOrHolder(ctx, &s, f.s.cluster, f.s.holders, f.s.clients, f.s.point)
	if err != nil {
		return Injection{}, err
	}
	if err := f.s.disarm(ctx); err != nil {
		return Injection{}, err
	}
	return Injection{Shape: shape, Targets: []string{target}}, nil
}

// Heal implements Fault: a client still held lets its reply go (and loses
// it); one armed and not reached is disarmed.
func (f *ReplyLostFault) Heal(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s.disarm(ctx)
}
