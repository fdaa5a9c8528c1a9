package backends

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/nemesis"
	"github.com/lockbench/lockbench/store"
)

// Etcd is three etcd members (the real server, built into the lockbench
// binary) locked with client/v3/concurrency: one Session per client, whose
// lease has the TTL, and a Mutex; the token is the lock key's create
// revision. It can also keep the protected value (--store etcd).
type Etcd struct{}

// EtcdDataPrefix is where --store etcd keeps the protected value.
const EtcdDataPrefix = "/lockbench/data"

var etcdNames = []string{"e1", "e2", "e3"}

// etcdDataDir is where each member keeps its WAL and database.
const etcdDataDir = "/var/lib/etcd"

// Name implements Backend.
func (Etcd) Name() string { return "etcd" }

// About implements Backend.
func (Etcd) About() string { return "three etcd members, concurrency.Mutex" }

// Tokens implements Backend.
func (Etcd) Tokens() bool { return true }

// Locks implements Backend.
func (Etcd) Locks() bool { return true }

// Layout implements Backend.
func (Etcd) Layout(cfg *config.Config) Layout {
	var peers []string
	for _, n := range etcdNames {
		peers = append(peers, n+"=http://"+n+":2380")
	}
	l := Layout{Addrs: withPort(etcdNames, 2379), Startup: 2800 * time.Millisecond,
		Ready: []string{"lockbench", "etcd-health", "--endpoints", strings.Join(withPort(etcdNames, 2379), ",")}}
	for _, n := range etcdNames {
		cmd := []string{"lockbench", "etcd",
			"--name", n, "--data-dir", etcdDataDir,
			"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://" + n + ":2379",
			"--listen-peer-urls", "http://0.0.0.0:2380", "--initial-advertise-peer-urls", "http://" + n + ":2380",
			"--initial-cluster", strings.Join(peers, ","), "--initial-cluster-state", "new", "--initial-cluster-token", "lockbench",
			"--log-level", "warn"}
		if !cfg.Has(nemesis.PowerLossFault) {
			// The data must survive a kill and restart; fsync would
			// measure the disk under the overlay, and a killed process
			// loses nothing the page cache holds. A power loss takes
			// back what was not fsynced: there etcd fsyncs as it does
			// in production (on the lockbench disk, which keeps its
			// record in memory and costs no real fsync).
			cmd = append(cmd, "--unsafe-no-fsync")
		}
		l.Services = append(l.Services, Service{
			Node:    clusters.Node{Name: n, Role: "etcd", Cmd: cmd},
			Version: []string{"lockbench", "etcd", "--version"},
			DataDir: etcdDataDir,
		})
	}
	// The members are asked one after the other (some may be paused or
	// cut off) which of them leads.
	l.Leader = func(ctx context.Context, ex Execer) (string, error) {
		return firstOf(etcdNames, func(n string) (string, error) {
			out, err := ex.Exec(ctx, n, "lockbench", "etcd-health", "--leader", "--endpoints", n+":2379")
			return strings.TrimSpace(out), err
		})
	}
	return l
}

// Refuses implements Backend.
func (Etcd) Refuses(fault string) string {
	if fault == "clock" {
		return "etcd reads the wall clock through the vDSO, where no LD_PRELOAD reaches, and its leases run on the monotonic clock"
	}
	return ""
}

// Check implements Backend.
func (Etcd) Check(cfg *config.Config) error {
	if cfg.TTL.D() < time.Second || cfg.TTL.D()%time.Second != 0 {
		return config.Usage("etcd leases count whole seconds: --ttl must be 1s, 2s, …, got %s", cfg.TTL.D())
	}
	if cfg.Store == (Etcd{}).Keeps() && cfg.Fence != store.FenceNone {
		return config.Usage("with --store etcd each write is a transaction on lock ownership, which is the fence; --fence applies to the lockbench store only")
	}
	return unsized(cfg)
}

// Lease implements Backend: the lock key lives as long as the session's
// lease; the leader expires a lease a TTL after the last grant or
// keep-alive it received, on Go's monotonic clock, which is the history's
// kernel clock; a leader change only extends leases (the new leader
// restarts every lease's full TTL). The bound uses the grants and
// keep-alives the client itself sent and saw acknowledged; its Session's
// own keep-alives are not observable and can only extend the lease.
func (Etcd) Lease(ttl int64) checkers.Lease { return checkers.Lease{TTL: ttl, Session: true} }

// Client implements Backend.
func (Etcd) Client(s Spec, trace locks.Trace, fp locks.Failpoint, r *rand.Rand) (Client, error) {
	l, err := locks.NewEtcd(locks.EtcdConfig{Endpoints: s.LockAddrs, Key: "/lockbench/lock/" + s.Key, TTL: s.TTL.D(), Trace: trace,
		Variant: s.Variant, Failpoint: fp, Retry: redisRetry, Rand: r})
	if err != nil {
		return Client{}, err
	}
	c := Client{Lock: l}
	if s.Store == (Etcd{}).Keeps() {
		c.Store = store.NewEtcd(l.Client(), EtcdDataPrefix, s.Epoch, l.OwnerCmp)
	}
	return c, nil
}

// Variants implements Mutant.
func (Etcd) Variants() []Variant {
	return []Variant{
		{locks.SharedKey, "put-if-absent on one fixed key with a lease, released by deleting that key by name"},
		{locks.IgnoreSessionDone, "keeps working after its session, and the lock with it, is gone"},
	}
}

// Failpoints implements Mutant.
func (Etcd) Failpoints() []string { return []string{locks.FailAcquired, locks.FailBeforeDelete} }

// Keeps implements Keeper.
func (Etcd) Keeps() string { return "etcd" }

// StoreLog implements Keeper: the key's revision history, read back from
// a member.
func (Etcd) StoreLog(ctx context.Context, ex Execer, _ *config.Config) ([]byte, error) {
	out, err := ex.Exec(ctx, etcdNames[0], "lockbench", "etcd-log",
		"--endpoints", strings.Join(withPort(etcdNames, 2379), ","), "--key", config.Key)
	return []byte(out), err
}
