package backends

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/locks"
)

// Redis is one Redis server locked with SET NX PX and compare-and-delete,
// renewed by compare-and-PEXPIRE; the token is an INCR in the same script.
type Redis struct{}

// Name implements Backend.
func (Redis) Name() string { return "redis" }

// About implements Backend.
func (Redis) About() string { return "one Redis, SET NX PX" }

// Tokens implements Backend.
func (Redis) Tokens() bool { return true }

// Locks implements Backend.
func (Redis) Locks() bool { return true }

// Layout implements Backend.
func (Redis) Layout(cfg *config.Config) Layout {
	return Layout{
		Services: []Service{redisNode("redis", cfg)},
		Addrs:    []string{"redis:6379"},
		Startup:  800 * time.Millisecond,
		Leader:   func(context.Context, Execer) (string, error) { return "redis", nil },
	}
}

// Refuses implements Backend.
func (Redis) Refuses(string) string { return "" }

// Check implements Backend.
func (Redis) Check(cfg *config.Config) error { return unsized(cfg) }

// Lease implements Backend.
func (Redis) Lease(ttl int64) checkers.Lease { return redisLease(ttl) }

// Client implements Backend.
func (Redis) Client(s Spec, trace locks.Trace, fp locks.Failpoint, r *rand.Rand) (Client, error) {
	return Client{Lock: locks.NewRedis(locks.RedisClient(s.LockAddrs[0], s.TTL.D()), redisConfig(s, trace, fp, r))}, nil
}

// Variants implements Mutant.
func (Redis) Variants() []Variant {
	return []Variant{
		{locks.SetNXExpire, "takes the lock with SETNX and sets its expiry with a second command"},
		{locks.DelRelease, "releases with a plain DEL, not checking that the key is still its own"},
		{locks.GetDelRelease, "checks ownership with GET, then deletes with DEL in a second round trip"},
		{locks.NoRenew, "never extends its lease while it works"},
		{locks.RenewIgnoresFailure, "renews in the background but never tells the holder that a renewal failed"},
	}
}

// Failpoints implements Mutant.
func (Redis) Failpoints() []string { return []string{locks.FailAcquired, locks.FailBeforeDelete} }

// redisRetry is how long a client waits between attempts at a held lock.
const redisRetry = 20 * time.Millisecond

func redisConfig(s Spec, trace locks.Trace, fp locks.Failpoint, r *rand.Rand) locks.RedisConfig {
	return locks.RedisConfig{Key: s.Key, Owner: s.Process, TTL: s.TTL.D(), Retry: redisRetry, Rand: r, Trace: trace,
		Variant: s.Variant, Failpoint: fp}
}

// redisLease: SET PX and PEXPIRE set the expiry to the server's time in
// whole milliseconds plus the TTL, so it can fall up to 1 ms short, and
// Redis reads the wall clock, which NTP may slew by at most 500 ppm against
// the monotonic clock the history is stamped with.
func redisLease(ttl int64) checkers.Lease {
	return checkers.Lease{TTL: ttl, SlackFixed: int64(time.Millisecond), SlackPPM: 500}
}

// redisNode is a Redis server; by default without persistence, as a lock
// service usually runs, so that a killed node comes back empty.
func redisNode(name string, cfg *config.Config) Service {
	cmd := []string{"redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--replica-announce-ip", name,
		"--dir", "/var/lib/redis", "--save", ""}
	switch cfg.RedisPersistence {
	case "everysec", "always":
		cmd = append(cmd, "--appendonly", "yes", "--appendfsync", cfg.RedisPersistence)
	default:
		cmd = append(cmd, "--appendonly", "no")
	}
	return Service{Node: clusters.Node{Name: name, Role: "redis", Cmd: cmd}, Probe: []string{"redis-cli", "ping"},
		Version: []string{"redis-server", "--version"}, WallClock: true, DataDir: "/var/lib/redis"}
}
