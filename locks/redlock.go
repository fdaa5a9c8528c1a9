package locks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// RedlockConfig configures a Redlock client over independent Redis nodes.
type RedlockConfig struct {
	Addrs []string
	Key   string
	TTL   time.Duration
	// Retry is the mean pause between attempts while the lock is taken.
	Retry time.Duration
	// DriftFactor is the share of the TTL Redlock subtracts for clock drift.
	DriftFactor float64
	Rand        *rand.Rand
	Trace       Trace
	// Variant is "" or config's correct for redsync as its README shows
	// it, else ExtendSetNX.
	Variant   string
	Failpoint Failpoint
}

// ExtendSetNX turns on redsync's WithSetNXOnExtend: an Extend that finds
// the key gone sets it again, so a holder whose lease expired while it was
// paused silently takes the lock back, as if it had never lost it, though
// another client may have held it, and written, in between
// (go-redsync/redsync, redsync.go: "WithSetNXOnExtend improves extending
// logic to extend the key if exist and if not, tries to set a new key").
const ExtendSetNX = "extend-setnx"

// RedlockDrift is the drift factor lockbench's Redlock clients use,
// redsync's default.
const RedlockDrift = 0.01

// Redlock is go-redsync's Redlock. It issues no fencing token: the random
// value that identifies a holding says nothing about order.
type Redlock struct {
	cfg     RedlockConfig
	clients []*redis.Client
	rs      *redsync.Redsync
}

// NewRedlock connects lazily to every node.
func NewRedlock(cfg RedlockConfig) *Redlock {
	l := &Redlock{cfg: cfg}
	var pools []redsyncredis.Pool
	for _, a := range cfg.Addrs {
		c := RedisClient(a, cfg.TTL)
		l.clients = append(l.clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	l.rs = redsync.New(pools...)
	return l
}

// Close closes every node's connections.
func (l *Redlock) Close() error {
	var errs []error
	for _, c := range l.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// Acquire takes the lock on a majority of nodes, retrying until ctx ends.
// It makes one redsync attempt at a time so that it knows when the attempt
// that took the lock was sent: the lease's validity starts there.
func (l *Redlock) Acquire(ctx context.Context) (Lease, error) {
	opts := []redsync.Option{redsync.WithExpiry(l.cfg.TTL), redsync.WithTries(1), redsync.WithDriftFactor(l.cfg.DriftFactor)}
	if l.cfg.Variant == ExtendSetNX {
		opts = append(opts, redsync.WithSetNXOnExtend())
	}
	m := l.rs.NewMutex(l.cfg.Key, opts...)
	for {
		sent := now(l.cfg.Trace)
		// redsync releases what it took on a failed attempt, so a failure
		// leaves this client without the lock.
		err := m.LockContext(ctx)
		if err == nil {
			l.cfg.Failpoint.hold(FailAcquired)
			lease := &redlockLease{fp: l.cfg.Failpoint, m: m, ttl: l.cfg.TTL, sent: sent, trace: l.cfg.Trace,
				lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
			go lease.extend()
			return lease, nil
		}
		// Jitter keeps waiting clients from retrying in lock step.
		wait := l.cfg.Retry/2 + time.Duration(l.cfg.Rand.Int64N(int64(l.cfg.Retry)+1))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
		case <-time.After(wait):
		}
	}
}

type redlockLease struct {
	fp     Failpoint
	m      *redsync.Mutex
	ttl    time.Duration
	sent   int64
	trace  Trace
	lost   chan struct{}
	once   sync.Once
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

func (l *redlockLease) Token() (int64, bool)  { return 0, false }
func (l *redlockLease) Lost() <-chan struct{} { return l.lost }
func (l *redlockLease) markLost()             { l.once.Do(func() { close(l.lost) }) }
func (l *redlockLease) Granted() (int64, time.Duration) {
	return l.sent, l.ttl
}

// extend calls Extend every third of the TTL, as redsync users keep a lock
// while they work; an extension that fails to reach a majority in time
// loses the lease.
func (l *redlockLease) extend() {
	defer close(l.done)
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
		done := renewing(l.trace)
		ok, err := l.m.ExtendContext(ctx)
		cancel()
		// A failed Extend may still have reached some nodes, or a quorum
		// too late for redsync: its effect is unknown, never "not renewed".
		if ok {
			done(l.ttl, nil)
		} else {
			done(0, fmt.Errorf("%w: extend: %v", ErrUnknown, err))
		}
		if !ok || time.Now().After(l.m.Until()) {
			l.markLost()
			return
		}
	}
}

func (l *redlockLease) Release(ctx context.Context) error {
	l.closed.Do(func() { close(l.stop) })
	<-l.done
	l.fp.hold(FailBeforeDelete)
	ok, err := l.m.UnlockContext(ctx)
	if ok {
		return nil
	}
	// Nodes that could not be reached may still have released; only
	// answers from every node that the lock was not ours make it definite.
	var unreachable *redsync.RedisError
	if errors.As(err, &unreachable) {
		return fmt.Errorf("%w: release: %w", ErrUnknown, err)
	}
	l.markLost()
	return ErrNotHeld
}
