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
)

// Sentinel is a Redis primary with two replicas and three Sentinels, locked
// as Redis through go-redis's FailoverClient.
type Sentinel struct{}

// sentinelMaster is the name the Sentinels monitor the primary under.
const sentinelMaster = "lockbench"

var sentinelNames = []string{"s1", "s2", "s3"}

// Name implements Backend.
func (Sentinel) Name() string { return "redis-sentinel" }

// About implements Backend.
func (Sentinel) About() string { return "a Redis primary, two replicas, three Sentinels" }

// Tokens implements Backend.
func (Sentinel) Tokens() bool { return true }

// Locks implements Backend.
func (Sentinel) Locks() bool { return true }

// Layout implements Backend.
func (Sentinel) Layout(cfg *config.Config) Layout {
	// Six Redis processes, as Redlock's per node; not benchmarked alone.
	l := Layout{Services: []Service{redisNode("r1", cfg)}, Addrs: withPort(sentinelNames, 26379), Startup: 2400 * time.Millisecond}
	for _, r := range []string{"r2", "r3"} {
		s := redisNode(r, cfg)
		s.Node.Cmd = append(s.Node.Cmd, "--replicaof", "r1", "6379")
		l.Services = append(l.Services, s)
	}
	for _, s := range sentinelNames {
		l.Services = append(l.Services, sentinelNode(s))
	}
	// The primary sees both replicas, every Sentinel knows both (it learns
	// them from the primary's INFO, every 10 s: without them it has nobody
	// to promote) and they agree on a quorum.
	l.Ready = []string{"sh", "-c", "redis-cli -h r1 info replication | grep -q connected_slaves:2 && " +
		"for s in " + strings.Join(sentinelNames, " ") + "; do redis-cli -h $s -p 26379 sentinel master " + sentinelMaster +
		" | grep -A1 -x num-slaves | grep -qx 2 || exit 1; done && " +
		"redis-cli -h s1 -p 26379 sentinel ckquorum " + sentinelMaster + " | grep 'OK 3 usable'"}
	l.Leader = primary
	return l
}

// primary asks the Sentinels which Redis is the primary now.
func primary(ctx context.Context, ex Execer) (string, error) {
	return firstOf(sentinelNames, func(s string) (string, error) {
		out, err := ex.Exec(ctx, s, "redis-cli", "-p", "26379", "sentinel", "get-master-addr-by-name", sentinelMaster)
		if err != nil {
			return "", err
		}
		host, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
		if host == "" {
			return "", errNoAnswer
		}
		return host, nil
	})
}

// Refuses implements Backend.
func (Sentinel) Refuses(string) string { return "" }

// Check implements Backend.
func (Sentinel) Check(cfg *config.Config) error { return unsized(cfg) }

// Lease implements Backend: as Redis's, the lock being the same.
func (Sentinel) Lease(ttl int64) checkers.Lease { return redisLease(ttl) }

// Client implements Backend.
func (Sentinel) Client(s Spec, trace locks.Trace, fp locks.Failpoint, r *rand.Rand) (Client, error) {
	return Client{Lock: locks.NewRedis(locks.SentinelClient(sentinelMaster, s.LockAddrs, s.TTL.D(), s.Dial), redisConfig(s, trace, fp, r))}, nil
}

// sentinelNode runs Sentinel from a config written at start: Sentinel
// rewrites its config file, so it cannot come from the image.
func sentinelNode(name string) Service {
	conf := strings.Join([]string{
		"port 26379",
		"sentinel resolve-hostnames yes",
		"sentinel announce-hostnames yes",
		"sentinel announce-ip " + name,
		"sentinel monitor " + sentinelMaster + " r1 6379 2",
		"sentinel down-after-milliseconds " + sentinelMaster + " 1000",
		"sentinel failover-timeout " + sentinelMaster + " 5000",
		"sentinel parallel-syncs " + sentinelMaster + " 1",
	}, "\n")
	return Service{
		Node: clusters.Node{Name: name, Role: "sentinel", Cmd: []string{"sh", "-c",
			"printf '%s\\n' \"$0\" > /etc/sentinel.conf && exec redis-server /etc/sentinel.conf --sentinel", conf}},
		Probe:    []string{"redis-cli", "-p", "26379", "ping"},
		Sentinel: true,
	}
}

// Variants implements Mutant: the variants are Redis's, tested there.
func (Sentinel) Variants() []Variant { return nil }

// Failpoints implements Mutant: its clients are Redis's.
func (Sentinel) Failpoints() []string { return Redis{}.Failpoints() }
