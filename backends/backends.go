// Package backends holds the lock services lockbench can test, one file
// each, behind one interface and a registry: how to start each service and
// know it is ready, how to find its leader, which faults apply to it, the
// lease model its exclusion is judged by, its configuration checks and its
// lock client. Nothing outside this package switches on a backend's name:
// adding a lock service is one file here and one line in All.
package backends

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nemesis"
	"github.com/lockbench/lockbench/workloads"
)

// Backend is one lock service.
type Backend interface {
	// Name is what --backend takes.
	Name() string
	// About says what the service is and how clients lock it, in a few
	// words, for the command line's help.
	About() string
	// Tokens reports whether the lock issues fencing tokens.
	Tokens() bool
	// Locks reports whether clients take a lock at all; those that do not
	// (cas, nolock) enter their section without one.
	Locks() bool
	// Layout is the service a run configured as cfg starts: none for a
	// backend that takes no lock.
	Layout(cfg *config.Config) Layout
	// Refuses says why a fault cannot mean anything on this service though
	// its layout has what the fault acts on, or "" when it can.
	Refuses(fault string) string
	// Check reports the first configuration error particular to this
	// backend, made with config.Usage, and clears the settings it does not
	// use (--nodes but for Redlock), so that test.json does not suggest
	// they mattered.
	Check(cfg *config.Config) error
	// Lease is the lease model the exclusion checker judges this lock by,
	// for a configured TTL in ns.
	Lease(ttl int64) checkers.Lease
	// Client makes one worker's lock client.
	Client(spec Spec, trace locks.Trace, fp locks.Failpoint, r *rand.Rand) (Client, error)
}

// Keeper is a backend that can also keep the protected value itself
// (--store NAME): each write is then a transaction on lock ownership.
type Keeper interface {
	// Keeps is the --store value the backend serves.
	Keeps() string
	// StoreLog reads back, after the run, every write the service kept,
	// in the store log's format.
	StoreLog(ctx context.Context, ex Execer, cfg *config.Config) ([]byte, error)
}

// Layout is a lock service as a run starts it.
type Layout struct {
	Services []Service
	// Addrs are what the clients connect to.
	Addrs []string
	// Ready, when set, is run in the first node after every probe passed:
	// a check of the whole service (all members, a leader). Its output is
	// stored in test.json.
	Ready []string
	// Independent is set when the service's nodes never talk to each other
	// (Redlock): only cuts between clients and nodes matter there.
	Independent bool
	// Shared is set for one server whose sessions every client holds
	// (nemesis.Topology.Shared).
	Shared bool
	// Leader, when set, names the node that leads now (etcd's leader, the
	// Redis primary).
	Leader func(ctx context.Context, ex Execer) (string, error)
	// Startup is about how long the service takes to come up healthy and
	// be removed on a 2-core machine (make bench's bring-up figures): what
	// matrix adds to a cell's time limit to estimate it and to balance
	// shards. An estimate, never a timeout.
	Startup time.Duration
}

// Service is one node of a lock service.
type Service struct {
	Node clusters.Node
	// Image is the kind of image the node runs when the node image does
	// not hold its server; the run builds it only then.
	Image images.Kind
	// Probe exits 0 once the node serves.
	Probe []string
	// Version, when set, prints the server's version on its first line,
	// stored in test.json under the node's role.
	Version []string
	// Sentinel marks a node that watches the service rather than holds
	// the lock: faults on lock-service nodes leave it alone.
	Sentinel bool
	// DataDir is where the server keeps what must survive a restart; a
	// power-loss run serves it from the lockbench disk. Empty for a server
	// whose data cannot be moved there (built into its image).
	DataDir string
	// WallClock marks a server that keeps its leases on the wall clock,
	// read through libc where the clock shim reaches: a clock fault runs
	// it under the shim.
	WallClock bool
}

// Execer runs a command in one of the run's nodes.
type Execer interface {
	Exec(ctx context.Context, node string, cmd ...string) (string, error)
}

// Client is what a worker's backend gives it.
type Client struct {
	// Lock is nil when clients take no lock.
	Lock locks.Locker
	// CAS makes each write conditional on the version read, in place of a
	// lock.
	CAS bool
	// Store, when set, keeps the protected value in the lock service
	// (Keeper) instead of the lockbench store.
	Store workloads.Store
}

// All are the backends this build knows, in the order help and grids list
// them.
var All = []Backend{
	Redis{},
	Redlock{},
	Sentinel{},
	Etcd{},
	ZooKeeper{},
	Postgres{},
	CAS{},
	NoLock{},
}

// Names are the backends' names, in the order of All.
func Names() []string {
	out := make([]string, len(All))
	for i, b := range All {
		out[i] = b.Name()
	}
	return out
}

// Lookup finds the backend named name.
func Lookup(name string) (Backend, bool) {
	for _, b := range All {
		if b.Name() == name {
			return b, true
		}
	}
	return nil, false
}

// LeaseOf is the lease model of the lock a run configured as cfg judges
// its exclusion by, as its backend supplies it.
func LeaseOf(cfg config.Config) checkers.Lease {
	b, ok := Lookup(cfg.Backend)
	if !ok {
		return checkers.Lease{None: fmt.Sprintf("this lockbench knows no lock service %q, so neither how its leases expire", cfg.Backend)}
	}
	return b.Lease(int64(cfg.TTL.D()))
}

// Help lists the backends with what each is, for --backend.
func Help() string {
	var parts []string
	for _, b := range All {
		parts = append(parts, fmt.Sprintf("%s (%s)", b.Name(), b.About()))
	}
	return strings.Join(parts, ", ")
}

// KeeperOf finds the backend that keeps the protected value for --store s.
func KeeperOf(s string) (Backend, bool) {
	for _, b := range All {
		if k, ok := b.(Keeper); ok && k.Keeps() == s {
			return b, true
		}
	}
	return nil, false
}

// Topology is the static part of the faults' view of a service: which
// nodes are what. The run adds its clients and the leader lookup.
func Topology(l Layout) nemesis.Topology {
	t := nemesis.Topology{Independent: l.Independent, Shared: l.Shared}
	for _, s := range l.Services {
		if s.Sentinel {
			t.Sentinels = append(t.Sentinels, s.Node.Name)
			continue
		}
		t.Service = append(t.Service, s.Node.Name)
		if s.DataDir != "" {
			t.Disks = append(t.Disks, s.Node.Name)
		}
		t.WallClock = t.WallClock || s.WallClock
	}
	return t
}

// Inapplicable says why the fault named fault cannot act on b configured
// as cfg, or "" when it can. It is the one rule `run` refuses by and
// `matrix` leaves cells out by.
func Inapplicable(b Backend, cfg *config.Config, fault string) string {
	if why := b.Refuses(fault); why != "" {
		return why
	}
	k, ok := nemesis.Lookup(fault)
	if !ok {
		return fmt.Sprintf("no fault is named %q", fault)
	}
	if need := k.Needs(Topology(b.Layout(cfg))); need != "" {
		return b.Name() + " " + need
	}
	if k.Point != "" && b.Locks() && !slices.Contains(FailpointsOf(b), k.Point) {
		return fmt.Sprintf("%s's clients never reach failpoint %s, where %s strikes", b.Name(), k.Point, fault)
	}
	return ""
}

// firstOf asks nodes one after the other (some may be paused or cut off)
// until one answers.
func firstOf(nodes []string, ask func(node string) (string, error)) (string, error) {
	var errs []error
	for _, n := range nodes {
		out, err := ask(n)
		if err == nil {
			return out, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", n, err))
	}
	return "", fmt.Errorf("no node answered: %w", errors.Join(errs...))
}

func withPort(names []string, port int) []string {
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("%s:%d", n, port))
	}
	return out
}

// noLease is the lease model of a lock that takes no lease.
func noLease(why string) checkers.Lease { return checkers.Lease{None: why} }

// errNoAnswer is a node's empty answer to a question it should answer.
var errNoAnswer = errors.New("empty answer")

// lockless is what every backend whose clients take no lock shares: no
// service, no token, nothing to configure.
type lockless struct{}

// Tokens implements Backend.
func (lockless) Tokens() bool { return false }

// Locks implements Backend.
func (lockless) Locks() bool { return false }

// Layout implements Backend.
func (lockless) Layout(*config.Config) Layout { return Layout{} }

// Refuses implements Backend.
func (lockless) Refuses(string) string { return "" }

// Check implements Backend.
func (lockless) Check(cfg *config.Config) error { return unsized(cfg) }

// unsized is the Check of a backend whose size is fixed.
func unsized(cfg *config.Config) error {
	cfg.Nodes = 0
	notPostgres(cfg)
	return nil
}

// notPostgres clears the PostgreSQL settings of a backend that is not
// PostgreSQL, so that test.json does not suggest they mattered.
func notPostgres(cfg *config.Config) {
	cfg.PgLock, cfg.PgIdleTimeout = "", 0
}
