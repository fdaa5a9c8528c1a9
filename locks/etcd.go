package locks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// EtcdConfig configures an etcd lock client.
type EtcdConfig struct {
	Endpoints []string
	Key       string // the lock's prefix
	// TTL is the session lease's time to live; etcd counts it in whole seconds.
	TTL   time.Duration
	Trace Trace
	// Variant is "" or config's correct for etcd's own recipe, else one of
	// SharedKey, IgnoreSessionDone.
	Variant   string
	Failpoint Failpoint
	// Retry is the mean pause between SharedKey's attempts at a held lock.
	Retry time.Duration
	Rand  *rand.Rand
}

// Etcd is etcd's own lock recipe: one Session (a lease kept alive in the
// background) per client and a Mutex on it. The fencing token is the
// revision at which the client's lock key was created, as etcd's docs
// advise: it grows with every acquisition.
type Etcd struct {
	cfg EtcdConfig
	cli *clientv3.Client

	mu      sync.Mutex
	session *etcdSession
	held    *concurrency.Mutex
}

// etcdSession is a Session on a lease this client granted itself, with its
// own keep-alives beside the Session's. The Session's keep-alives cannot be
// observed (their send times are private to the client library), so the
// lease is proved by the grant and by the keep-alives sent here: each
// acknowledged one was sent before the leader reset the lease's expiry to
// its TTL from then. The Session's own keep-alives can only make the lease
// last longer than that proof says, so the proof stays a lower bound.
type etcdSession struct {
	s *concurrency.Session
	// done is closed when the keep-alive loop has returned.
	done chan struct{}

	mu   sync.Mutex
	sent int64 // the newest acknowledged grant or keep-alive's send time
	ttl  time.Duration
}

func (s *etcdSession) granted() (int64, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent, s.ttl
}

// NewEtcd connects to the cluster.
func NewEtcd(cfg EtcdConfig) (*Etcd, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	return &Etcd{cfg: cfg, cli: cli}, nil
}

// Client is the connection, for a store kept in the same etcd.
func (e *Etcd) Client() *clientv3.Client { return e.cli }

// Close revokes the session's lease and closes the connection.
func (e *Etcd) Close() error {
	e.mu.Lock()
	s := e.session
	e.mu.Unlock()
	if s != nil {
		s.s.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = e.cli.Revoke(ctx, s.s.Lease())
		cancel()
		<-s.done
	}
	return e.cli.Close()
}

// liveSession returns the client's session, starting a new one when the
// last one's lease is gone: a lost lease never comes back.
func (e *Etcd) liveSession(ctx context.Context) (*etcdSession, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != nil {
		select {
		case <-e.session.s.Done():
			// One keep-alive loop at a time, so that the lease's record
			// has one renewal outstanding at a time.
			<-e.session.done
			e.session = nil
		default:
			return e.session, nil
		}
	}
	sent := now(e.cfg.Trace)
	grant, err := e.cli.Grant(ctx, int64(e.cfg.TTL/time.Second))
	if err != nil {
		return nil, fmt.Errorf("grant lease: %w", err)
	}
	s, err := concurrency.NewSession(e.cli, concurrency.WithLease(grant.ID), concurrency.WithContext(context.Background()))
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.TTL)
		defer cancel()
		_, _ = e.cli.Revoke(ctx, grant.ID)
		return nil, err
	}
	es := &etcdSession{s: s, done: make(chan struct{}), sent: sent, ttl: time.Duration(grant.TTL) * time.Second}
	go e.keepAlive(es)
	e.session = es
	return es, nil
}

// keepAlive sends a keep-alive every third of the TTL until the session
// ends, as the Session itself does, and records each one.
func (e *Etcd) keepAlive(es *etcdSession) {
	defer close(es.done)
	tick := time.NewTicker(e.cfg.TTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-es.s.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.TTL/3)
		sent := now(e.cfg.Trace)
		done := renewing(e.cfg.Trace)
		resp, err := e.cli.KeepAliveOnce(ctx, es.s.Lease())
		cancel()
		switch {
		case err == nil:
			ttl := time.Duration(resp.TTL) * time.Second
			es.mu.Lock()
			es.sent, es.ttl = sent, ttl
			es.mu.Unlock()
			done(ttl, nil)
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			done(0, fmt.Errorf("%w: keep-alive: %w", ErrNotHeld, err))
		default:
			done(0, fmt.Errorf("%w: keep-alive: %w", ErrUnknown, err))
		}
	}
}

// Acquire waits for the Mutex until ctx ends.
func (e *Etcd) Acquire(ctx context.Context) (Lease, error) {
	s, err := e.liveSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: session: %w", ErrNotAcquired, err)
	}
	if e.cfg.Variant == SharedKey {
		return e.acquireShared(ctx, s)
	}
	m := concurrency.NewMutex(s.s, e.cfg.Key)
	if err := m.Lock(ctx); err != nil {
		// Lock deletes its key when it gives up, so a deadline means the
		// lock was not taken; anything else may have left it taken.
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAcquired, err)
		}
		e.dropSession(s)
		return nil, fmt.Errorf("%w: lock: %w", ErrUnknown, err)
	}
	resp, err := e.cli.Get(ctx, m.Key())
	if err != nil || len(resp.Kvs) == 0 {
		// Held, but the token cannot be told: give it back.
		uctx, cancel := context.WithTimeout(context.Background(), e.cfg.TTL)
		_ = m.Unlock(uctx)
		cancel()
		return nil, fmt.Errorf("%w: read lock revision: %v", ErrUnknown, err)
	}
	e.mu.Lock()
	e.held = m
	e.mu.Unlock()
	e.cfg.Failpoint.hold(FailAcquired)
	return &etcdLease{e: e, m: m, s: s, token: resp.Kvs[0].CreateRevision}, nil
}

// OwnerCmp is the transaction guard that holds while this client still owns
// the lock it last acquired; ok is false when it holds none.
func (e *Etcd) OwnerCmp() (clientv3.Cmp, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.held == nil {
		return clientv3.Cmp{}, false
	}
	return e.held.IsOwner(), true
}

type etcdLease struct {
	e *Etcd
	// m is nil for SharedKey, which deletes its key by name.
	m     *concurrency.Mutex
	s     *etcdSession
	token int64
}

func (l *etcdLease) Token() (int64, bool) { return l.token, true }

// Lost is the session's end: its lease expired or could not be kept alive.
// IgnoreSessionDone never looks at it: a nil channel is never ready.
func (l *etcdLease) Lost() <-chan struct{} {
	if l.e.cfg.Variant == IgnoreSessionDone {
		return nil
	}
	return l.s.s.Done()
}

// Granted is the session lease's newest proof: the lock key lives as long
// as that lease, whenever the Mutex was taken.
func (l *etcdLease) Granted() (int64, time.Duration) { return l.s.granted() }

func (l *etcdLease) Release(ctx context.Context) error {
	l.e.mu.Lock()
	l.e.held = nil
	l.e.mu.Unlock()
	select {
	case <-l.s.s.Done():
		// The lease, and the key with it, is gone.
		return ErrNotHeld
	default:
	}
	l.e.cfg.Failpoint.hold(FailBeforeDelete)
	if l.m == nil {
		return l.e.releaseShared(ctx, l.s)
	}
	if err := l.m.Unlock(ctx); err != nil {
		l.e.dropSession(l.s)
		return fmt.Errorf("%w: release: %w", ErrUnknown, err)
	}
	return nil
}

// dropSession gives up a session whose lock key may still exist. A Mutex
// on the same session would find that key and take it again with its old
// create revision: the same fencing token for a new acquisition. A new
// session has a new lease, so its key, and its revision, are new.
func (e *Etcd) dropSession(s *etcdSession) {
	s.s.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.TTL)
	defer cancel()
	_, _ = e.cli.Revoke(ctx, s.s.Lease())
	<-s.done
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session == s {
		e.session = nil
	}
}
