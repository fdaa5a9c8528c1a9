package locks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The lock is SET NX PX with a value unique to the holding; the fencing token
// is an INCR done in the same script, so a token exists exactly when the lock
// was taken and tokens follow the order in which Redis granted the lock.
var (
	acquireScript = redis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0`)
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)
)

// RedisConfig configures a single-Redis lock client.
type RedisConfig struct {
	Key   string // the lock's key; its token counter is Key + ":token"
	Owner string // this client's name, part of every holding's value
	TTL   time.Duration
	// Retry is the mean pause between attempts to take a held lock.
	Retry time.Duration
	Rand  *rand.Rand
	Trace Trace
	// Variant is the client's code path: "" or config's correct for the
	// lock as redis.io describes it, else one of the known-broken clients
	// of redis_variants.go.
	Variant   string
	Failpoint Failpoint
}

// Redis is the Redis lock, on one instance or on the primary a Sentinel
// names.
type Redis struct {
	cfg  RedisConfig
	rdb  redis.UniversalClient
	seq  int
	rand *rand.Rand
}

// NewRedis locks through rdb, which it closes on Close.
func NewRedis(rdb redis.UniversalClient, cfg RedisConfig) *Redis {
	return &Redis{cfg: cfg, rdb: rdb, rand: cfg.Rand}
}

// RedisClient connects lazily to one Redis at addr, with timeouts scaled to
// the lease so that a call never outlives a good part of it.
func RedisClient(addr string, ttl time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr,
		// A retried script may run twice; one attempt keeps outcomes honest.
		MaxRetries:   -1,
		DialTimeout:  ttl / 2,
		ReadTimeout:  ttl / 4,
		WriteTimeout: ttl / 4,
		PoolSize:     4,
	})
}

// SentinelClient follows the primary that the Sentinels name, as go-redis
// users of a Sentinel deployment do.
// dial, when not nil, dials every connection, to the Sentinels and to the
// primary they name.
func SentinelClient(master string, sentinels []string, ttl time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    master,
		SentinelAddrs: sentinels,
		Dialer:        dial,
		MaxRetries:    -1,
		DialTimeout:   ttl / 2,
		ReadTimeout:   ttl / 4,
		WriteTimeout:  ttl / 4,
		PoolSize:      4,
	})
}

// Close closes the connection pool.
func (r *Redis) Close() error { return r.rdb.Close() }

// Acquire tries SET NX until it succeeds or ctx ends.
func (r *Redis) Acquire(ctx context.Context) (Lease, error) {
	r.seq++
	value := fmt.Sprintf("%s:%d", r.cfg.Owner, r.seq)
	keys := []string{r.cfg.Key, r.cfg.Key + ":token"}
	for {
		sent := now(r.cfg.Trace)
		token, err := r.take(ctx, keys, value)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, fmt.Errorf("%w: %w", ErrUnknown, err)
			}
			return nil, fmt.Errorf("%w: acquire: %w", ErrUnknown, err)
		}
		if token > 0 {
			if r.cfg.Variant == SetNXExpire {
				if err := r.expire(ctx, value); err != nil {
					return nil, fmt.Errorf("%w: expire: %w", ErrUnknown, err)
				}
			} else {
				r.cfg.Failpoint.hold(FailAcquired)
			}
			return r.newLease(value, token, sent), nil
		}
		// Jitter keeps waiting clients from retrying in lock step.
		wait := r.cfg.Retry/2 + time.Duration(r.rand.Int64N(int64(r.cfg.Retry)+1))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, ctx.Err())
		case <-time.After(wait):
		}
	}
}

type redisLease struct {
	r      *Redis
	value  string
	token  int64
	sent   int64
	lost   chan struct{}
	once   sync.Once
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

func (r *Redis) newLease(value string, token, sent int64) *redisLease {
	l := &redisLease{r: r, value: value, token: token, sent: sent,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if r.cfg.Variant == NoRenew {
		close(l.done)
	} else {
		go l.renew()
	}
	return l
}

func (l *redisLease) Token() (int64, bool)  { return l.token, true }
func (l *redisLease) Lost() <-chan struct{} { return l.lost }
func (l *redisLease) Granted() (int64, time.Duration) {
	return l.sent, l.r.cfg.TTL
}

func (l *redisLease) markLost() { l.once.Do(func() { close(l.lost) }) }

// renew extends the lease every third of the TTL, as lock users do while
// their critical section runs. A renewal that finds the key gone or owned by
// another holding means the lease is lost; renewals that keep failing with
// errors lose it once a whole TTL has passed since the last good one.
func (l *redisLease) renew() {
	defer close(l.done)
	ttl := l.r.cfg.TTL
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	lastGood := time.Now()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
		done := renewing(l.r.cfg.Trace)
		n, err := renewScript.Run(ctx, l.r.rdb, []string{l.r.cfg.Key}, l.value, ttl.Milliseconds()).Int64()
		cancel()
		switch {
		case err != nil:
			done(0, fmt.Errorf("%w: renew: %w", ErrUnknown, err))
		case n == 1:
			done(ttl, nil)
		default:
			done(0, fmt.Errorf("%w: renew found the key gone or taken", ErrNotHeld))
		}
		switch {
		case err == nil && n == 1:
			lastGood = time.Now()
		case l.r.cfg.Variant == RenewIgnoresFailure:
			// The failure was traced above, but the holder is not told.
		case err == nil:
			l.markLost()
			return
		case time.Since(lastGood) > ttl:
			l.markLost()
			return
		}
	}
}

func (l *redisLease) Release(ctx context.Context) error {
	l.closed.Do(func() { close(l.stop) })
	<-l.done
	n, err := l.r.release(ctx, l.value)
	if err != nil {
		return fmt.Errorf("%w: release: %w", ErrUnknown, err)
	}
	if n == 0 {
		l.markLost()
		return ErrNotHeld
	}
	return nil
}

// take makes one attempt at the lock, returning its token, or 0 when the
// lock is held.
func (r *Redis) take(ctx context.Context, keys []string, value string) (int64, error) {
	if r.cfg.Variant == SetNXExpire {
		return r.setNX(ctx, keys, value)
	}
	return acquireScript.Run(ctx, r.rdb, keys, value, r.cfg.TTL.Milliseconds()).Int64()
}

// release deletes the holding's key, returning how many keys it deleted.
func (r *Redis) release(ctx context.Context, value string) (int64, error) {
	switch r.cfg.Variant {
	case DelRelease:
		return r.delRelease(ctx)
	case GetDelRelease:
		return r.getDelRelease(ctx, value)
	}
	r.cfg.Failpoint.hold(FailBeforeDelete)
	return releaseScript.Run(ctx, r.rdb, []string{r.cfg.Key}, value).Int64()
}
