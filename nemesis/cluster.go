package nemesis

import (
	"context"
	"math/rand/v2"
	"slices"
)

// Cluster is what faults act on: the run's containers.
type Cluster interface {
	Signaler
	Pause(ctx context.Context, node string) error
	Unpause(ctx context.Context, node string) error
	Restart(ctx context.Context, node string) error
	Exec(ctx context.Context, node string, cmd ...string) (string, error)
	IP(ctx context.Context, node string) (string, error)
}

// Topology names a run's nodes by what they are.
type Topology struct {
	// Service holds the lock service's data nodes (redis; r1..rN; the
	// Sentinel deployment's r1..r3; e1..e3).
	Service []string
	// Disks are the service nodes whose data directory the lockbench disk
	// serves in a power-loss run: those a power cut can take writes from.
	Disks []string
	// Sentinels watch the Redis primary (redis-sentinel only).
	Sentinels []string
	Clients   []string
	// Store is the lockbench store's node; "" when the lock service keeps
	// the protected value itself.
	Store string
	// Independent is set when the service nodes never talk to each other
	// (Redlock): only cuts between clients and nodes matter there.
	Independent bool
	// Shared is set for a service of one server whose sessions every
	// client holds (PostgreSQL): cutting that server from every client at
	// once is a shape of its own, beside cutting the holder off.
	Shared bool
	// WallClock is set when the service nodes keep their leases on the
	// wall clock, read through libc where the clock shim reaches (Redis);
	// their commands then run under UnderClock when a clock fault is asked
	// for.
	WallClock bool
	// Leader names the node that leads now (etcd's leader, the Redis
	// primary); nil when the service has none.
	Leader func(ctx context.Context) (string, error)
}

// minority picks fewer than half of nodes at random (at least one).
func minority(r *rand.Rand, nodes []string) []string {
	n := max(1, (len(nodes)-1)/2)
	return pick(r, nodes, n)
}

// majority picks more than half of nodes at random.
func majority(r *rand.Rand, nodes []string) []string {
	return pick(r, nodes, len(nodes)/2+1)
}

// pick chooses n of nodes; the same rng state gives the same choice.
func pick(r *rand.Rand, nodes []string, n int) []string {
	s := slices.Clone(nodes)
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	s = s[:min(n, len(s))]
	slices.Sort(s)
	return s
}

// without is nodes minus some.
func without(nodes, some []string) []string {
	var out []string
	for _, n := range nodes {
		if !slices.Contains(some, n) {
			out = append(out, n)
		}
	}
	return out
}
