package backends

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/locks"
)

// Redlock is --nodes independent Redis servers locked by quorum with
// go-redsync. It issues no fencing token.
type Redlock struct{}

// Name implements Backend.
func (Redlock) Name() string { return "redlock" }

// About implements Backend.
func (Redlock) About() string { return "--nodes independent Redis, quorum" }

// Tokens implements Backend.
func (Redlock) Tokens() bool { return false }

// Locks implements Backend.
func (Redlock) Locks() bool { return true }

// Layout implements Backend.
func (Redlock) Layout(cfg *config.Config) Layout {
	var l Layout
	var names []string
	for i := 1; i <= cfg.Nodes; i++ {
		names = append(names, fmt.Sprintf("r%d", i))
	}
	for _, n := range names {
		l.Services = append(l.Services, redisNode(n, cfg))
	}
	l.Addrs, l.Independent = withPort(names, 6379), true
	// make bench: 2.0 s for five nodes.
	l.Startup = time.Duration(cfg.Nodes) * 400 * time.Millisecond
	return l
}

// Refuses implements Backend.
func (Redlock) Refuses(string) string { return "" }

// Check implements Backend.
func (Redlock) Check(cfg *config.Config) error {
	if cfg.Nodes < 1 || cfg.Nodes > 9 {
		return config.Usage("--nodes must be between 1 and 9 for redlock, got %d", cfg.Nodes)
	}
	notPostgres(cfg)
	return nil
}

// Lease implements Backend: Redlock's own validity rule, the attempt's
// start + ttl × (1 − drift), computed by the checker from the recorded send
// time and not from the client's own validity, so a client that
// miscomputes its validity cannot move the window; less the 1 ms of Redis's
// millisecond expiry.
func (Redlock) Lease(ttl int64) checkers.Lease {
	return checkers.Lease{TTL: ttl, SlackFixed: int64(time.Millisecond), SlackPPM: int64(locks.RedlockDrift * 1e6)}
}

// Client implements Backend.
func (Redlock) Client(s Spec, trace locks.Trace, fp locks.Failpoint, r *rand.Rand) (Client, error) {
	return Client{Lock: locks.NewRedlock(locks.RedlockConfig{Addrs: s.LockAddrs, Key: s.Key, TTL: s.TTL.D(),
		Retry: redisRetry, DriftFactor: locks.RedlockDrift, Rand: r, Trace: trace, Variant: s.Variant, Failpoint: fp})}, nil
}

// Variants implements Mutant.
func (Redlock) Variants() []Variant {
	return []Variant{{locks.ExtendSetNX, "redsync's WithSetNXOnExtend: an Extend after expiry silently takes the lock again"}}
}

// Failpoints implements Mutant.
func (Redlock) Failpoints() []string { return []string{locks.FailAcquired, locks.FailBeforeDelete} }
