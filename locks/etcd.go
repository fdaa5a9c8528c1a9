package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// EtcdConfig configures an etcd lock client.
type EtcdConfig struct {
	Endpoints []string
	Key       string // the lock's prefix
	// TTL is the session lease's time to live; etcd counts it in whole seconds.
	TTL time.Duration
}

// Etcd is etcd's own lock recipe: one Session (a lease kept alive in the
// background) per client and a Mutex on it. The fencing token is the
// revision at which the client's lock key was created, as etcd's docs
// advise: it grows with every acquisition.
type Etcd struct {
	cfg EtcdConfig
	cli *clientv3.Client

	mu      sync.Mutex
	session *concurrency.Session
	held    *concurrency.Mutex
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
	var errs []error
	if s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = e.cli.Revoke(ctx, s.Lease())
		cancel()
	}
	errs = append(errs, e.cli.Close())
	return errors.Join(errs...)
}

// liveSession returns the client's session, starting a new one when the
// last one's lease is gone: a lost lease never comes back.
func (e *Etcd) liveSession(ctx context.Context) (*concurrency.Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session != nil {
		select {
		case <-e.session.Done():
			e.session = nil
		default:
			return e.session, nil
		}
	}
	s, err := concurrency.NewSession(e.cli, concurrency.WithTTL(int(e.cfg.TTL/time.Second)), concurrency.WithContext(context.Background()))
	if err != nil {
		return nil, err
	}
	e.session = s
	return s, nil
}

// Acquire waits for the Mutex until ctx ends.
func (e *Etcd) Acquire(ctx context.Context) (Lease, error) {
	s, err := e.liveSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: session: %w", ErrNotAcquired, err)
	}
	m := concurrency.NewMutex(s, e.cfg.Key)
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
	e     *Etcd
	m     *concurrency.Mutex
	s     *concurrency.Session
	token int64
}

func (l *etcdLease) Token() (int64, bool) { return l.token, true }

// Lost is the session's end: its lease expired or could not be kept alive.
func (l *etcdLease) Lost() <-chan struct{} { return l.s.Done() }

func (l *etcdLease) Release(ctx context.Context) error {
	l.e.mu.Lock()
	l.e.held = nil
	l.e.mu.Unlock()
	select {
	case <-l.s.Done():
		// The lease, and the key with it, is gone.
		return ErrNotHeld
	default:
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
func (e *Etcd) dropSession(s *concurrency.Session) {
	s.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.TTL)
	defer cancel()
	_, _ = e.cli.Revoke(ctx, s.Lease())
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session == s {
		e.session = nil
	}
}
