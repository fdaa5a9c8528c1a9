package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
)

// Signaler sends a signal to a node's main process.
type Signaler interface {
	Signal(ctx context.Context, node, sig string) error
}

// Holders tells which clients believe they hold the lock right now.
type Holders interface {
	// WaitHolder blocks until some live client holds the lock, and
	// returns one.
	WaitHolder(ctx context.Context) (string, error)
	// Live are those of clients that no fault has killed.
	Live(clients []string) []string
	// Hits counts the failpoint hits the clients reported so far.
	Hits() int
	// WaitHit blocks until a client reports that it holds at point, in a
	// hit after the first `after`, and returns that client.
	WaitHit(ctx context.Context, point string, after int) (string, error)
	// WaitGrant blocks until a client is granted the lock after the call,
	// and returns it.
	WaitGrant(ctx context.Context) (string, error)
}

// Targets (--target). A fault that strikes clients strikes the holder,
// one client or all of them; a fault that strikes lock-service nodes
// strikes one, a minority, a majority, the leader or all of them, or,
// for holder and random, one of those shapes drawn from the seed (holder
// once a client holds the lock).
const (
	TargetHolder   = "holder"
	TargetRandom   = "random"
	TargetAll      = "all"
	TargetOne      = "one"
	TargetMinority = "minority"
	TargetMajority = "majority"
	TargetLeader   = "leader"
)

// ClientTargets and NodeTargets are the targets the faults that strike
// clients and nodes take.
var (
	ClientTargets = []string{TargetHolder, TargetRandom, TargetAll}
	NodeTargets   = []string{TargetHolder, TargetRandom, TargetOne, TargetMinority, TargetMajority, TargetLeader, TargetAll}
)

var pauseKind = Kind{Name: "pause", Outlived: true, Strikes: true, Targets: ClientTargets,
	// Clients that take no lock are frozen inside their section: every
	// backend has clients.
	Needs: func(Topology) string { return "" },
	New: func(_ context.Context, e Env) Fault {
		return &PauseClient{Nodes: e.Cluster, Holders: e.Holders, Clients: e.Topology.Clients, Target: e.Target, Failpoint: e.Failpoint}
	},
}

// PauseClient freezes clients with SIGSTOP, which stops their renewals too,
// as a long GC pause or a stalled VM would. A paused holder's lease expires
// while it sleeps; when it resumes it still believes it holds the lock.
type PauseClient struct {
	Nodes   Signaler
	Holders Holders
	Clients []string
	Target  string // TargetHolder (default), TargetRandom or TargetAll
	// Failpoint, when set, freezes the first client to reach that point of
	// its code instead of a Target; Nodes must then be a Cluster, which
	// can arm it.
	Failpoint string

	mu     sync.Mutex
	paused map[string]bool
	s      *striker
}

// Name implements Fault.
func (p *PauseClient) Name() string { return "pause" }

// Inject implements Fault.
func (p *PauseClient) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	var targets []string
	shape := p.target()
	switch {
	case p.Failpoint != "":
		c, ok := p.Nodes.(Cluster)
		if !ok {
			return Injection{}, fmt.Errorf("pause at failpoint %s: the nodes cannot be armed", p.Failpoint)
		}
		p.mu.Lock()
		target, how, err := strikeOrHolder(ctx, &p.s, c, p.Holders, p.Clients, p.Failpoint)
		p.mu.Unlock()
		if err != nil {
			return Injection{}, err
		}
		targets, shape = []string{target}, how
	default:
		var err error
		if targets, err = aim(ctx, r, p.Holders, p.Clients, p.Target); err != nil {
			return Injection{}, err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := hitEach(&p.paused, targets, func(t string) error { return p.Nodes.Signal(ctx, t, "SIGSTOP") }); err != nil {
		return Injection{}, err
	}
	return Injection{Shape: shape, Targets: targets}, nil
}

// aim picks the clients a client fault strikes: the holder (the default,
// waiting for one), one live client, or every live client.
func aim(ctx context.Context, r *rand.Rand, h Holders, clients []string, target string) ([]string, error) {
	switch target {
	case TargetAll:
		return h.Live(clients), nil
	case TargetRandom:
		return pick(r, h.Live(clients), 1), nil
	}
	holder, err := h.WaitHolder(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	return []string{holder}, nil
}

func (p *PauseClient) target() string {
	if p.Target == "" {
		return TargetHolder
	}
	return p.Target
}

// Heal implements Fault.
func (p *PauseClient) Heal(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Disarmed first, so that a client held at its failpoint goes on as
	// soon as it thaws.
	var disarmErr error
	if p.s != nil {
		disarmErr = p.s.disarm(ctx)
	}
	return errors.Join(disarmErr, healEach(p.paused, func(n string) error {
		// A client killed while frozen has nothing left to thaw.
		if p.Holders != nil && len(p.Holders.Live([]string{n})) == 0 {
			return nil
		}
		return p.Nodes.Signal(ctx, n, "SIGCONT")
	}))
}

// hitEach applies a fault to every target, marking each in set before
// acting on it: if the call fails half way, Heal still undoes it.
func hitEach(set *map[string]bool, targets []string, hit func(string) error) error {
	if *set == nil {
		*set = map[string]bool{}
	}
	for _, t := range targets {
		(*set)[t] = true
		if err := hit(t); err != nil {
			return err
		}
	}
	return nil
}

// healEach undoes a fault on every node in set, forgetting those it healed;
// it returns the first error after trying them all.
func healEach(set map[string]bool, heal func(string) error) error {
	var first error
	for _, n := range sortedSet(set) {
		if err := heal(n); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		delete(set, n)
	}
	return first
}

var pauseNodeKind = Kind{Name: "pause-node", Outlived: true, Service: true, Needs: needsNodes("pause-node"), Targets: NodeTargets,
	New: func(_ context.Context, e Env) Fault {
		return &PauseNode{Cluster: e.Cluster, Topology: e.Topology, Holders: e.Holders, Target: e.Target}
	},
}

// PauseNode freezes lock-service nodes whole (docker pause): one, a
// minority, a majority, or the leader or primary.
type PauseNode struct {
	Cluster  Cluster
	Topology Topology
	Holders  Holders
	Target   string // a NodeTargets value; "" is TargetRandom

	mu     sync.Mutex
	paused map[string]bool
}

// Name implements Fault.
func (p *PauseNode) Name() string { return "pause-node" }

// Inject implements Fault.
func (p *PauseNode) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	shape, targets, err := nodeShape(ctx, r, p.Topology, p.Holders, p.Target, nodeShapes)
	if err != nil {
		return Injection{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := hitEach(&p.paused, targets, func(t string) error { return p.Cluster.Pause(ctx, t) }); err != nil {
		return Injection{}, err
	}
	return Injection{Shape: shape, Targets: targets}, nil
}

// Heal implements Fault.
func (p *PauseNode) Heal(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return healEach(p.paused, func(n string) error { return p.Cluster.Unpause(ctx, n) })
}

// nodeShapes are the shapes a node fault draws from for TargetHolder and
// TargetRandom: one, a minority, a majority, or the leader when the
// service has one.
var nodeShapes = []string{TargetOne, TargetMinority, TargetMajority, TargetLeader}

// nodeShape picks which service nodes a node fault hits: the shape target
// names, or for TargetHolder and TargetRandom one of shapes, drawn from r
// (for TargetHolder once a client holds the lock, so that the fault
// strikes while a lease is running).
func nodeShape(ctx context.Context, r *rand.Rand, t Topology, h Holders, target string, shapes []string) (string, []string, error) {
	shape := target
	if target == TargetHolder || target == TargetRandom || target == "" {
		if target == TargetHolder {
			if _, err := h.WaitHolder(ctx); err != nil {
				return "", nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
			}
		}
		if t.Leader == nil {
			shapes = without(shapes, []string{TargetLeader})
		}
		shape = shapes[r.IntN(len(shapes))]
	}
	switch shape {
	case TargetMinority:
		return shape, minority(r, t.Service), nil
	case TargetMajority:
		return shape, majority(r, t.Service), nil
	case TargetAll:
		return shape, slices.Clone(t.Service), nil
	case TargetLeader:
		if t.Leader == nil {
			return "", nil, fmt.Errorf("%w: the lock service has no leader", ErrNoTarget)
		}
		l, err := t.Leader(ctx)
		if err != nil {
			return "", nil, fmt.Errorf("%w: find the leader: %w", ErrNoTarget, err)
		}
		return shape, []string{l}, nil
	default:
		return shape, pick(r, t.Service, 1), nil
	}
}
