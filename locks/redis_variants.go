package locks

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The known-broken Redis lock clients: each is one mistake, as shipped in
// real code, made beside the correct client so that the harness can show it
// catches the mistake.
const (
	// SetNXExpire takes the lock with SETNX and sets its expiry with a
	// second command: a client that dies between the two leaves a lock that
	// never expires. The pattern of the SETNX command's page ("Design
	// pattern: Locking with SETNX", now marked discouraged) and of many
	// pre-2.6.12 lock libraries, before SET gained NX and PX.
	SetNXExpire = "setnx-expire"
	// DelRelease releases with a plain DEL, without checking that the key
	// is still its own, so a holder whose lease ran out deletes the next
	// holder's lock. redis.io's "Distributed Locks with Redis" warns
	// against it: "remove the key only if it exists and its value is still
	// the random value the client set".
	DelRelease = "del-release"
	// GetDelRelease checks ownership with GET and deletes with DEL in a
	// second round trip: the key can expire, and be taken by another
	// client, between the two. The same page is why the check and the
	// delete run in one Lua script.
	GetDelRelease = "get-del-release"
	// NoRenew never extends its lease while it works, so a section longer
	// than the TTL runs on after the lock went to someone else (Kleppmann,
	// "How to do distributed locking": the lease must outlast the work).
	NoRenew = "no-renew"
	// RenewIgnoresFailure renews in the background but never tells the
	// holder that a renewal failed, the way a refresh goroutine that drops
	// its error does (bsm/redislock's Refresh returns ErrNotObtained, which
	// a fire-and-forget refresher discards).
	RenewIgnoresFailure = "renew-ignores-failure"
)

// setNX is SetNXExpire's first step: SETNX with no expiry, then the token.
// Between it and expire, the key has no TTL at all.
func (r *Redis) setNX(ctx context.Context, keys []string, value string) (int64, error) {
	ok, err := r.rdb.SetNX(ctx, keys[0], value, 0).Result()
	if err != nil || !ok {
		return 0, err
	}
	return r.rdb.Incr(ctx, keys[1]).Result()
}

// expire is SetNXExpire's second step, after the failpoint that lets the
// nemesis kill the client in between.
func (r *Redis) expire(ctx context.Context, value string) error {
	r.cfg.Failpoint.hold(FailAcquired)
	return r.rdb.PExpire(ctx, r.cfg.Key, r.cfg.TTL).Err()
}

// delRelease deletes the key whoever holds it.
func (r *Redis) delRelease(ctx context.Context) (int64, error) {
	r.cfg.Failpoint.hold(FailBeforeDelete)
	return r.rdb.Del(ctx, r.cfg.Key).Result()
}

// getDelRelease compares, then deletes in a second round trip.
func (r *Redis) getDelRelease(ctx context.Context, value string) (int64, error) {
	got, err := r.rdb.Get(ctx, r.cfg.Key).Result()
	if err != nil || got != value {
		return 0, redisNil(err)
	}
	r.cfg.Failpoint.hold(FailBeforeDelete)
	return r.rdb.Del(ctx, r.cfg.Key).Result()
}

// redisNil makes a missing key what it means to a release: not held.
func redisNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	return nil
}
