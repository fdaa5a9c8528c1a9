// Package workloads holds the client loops that exercise a lock and the
// resource it protects, recording every step as history events.
package workloads

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/store"
)

// Store is the resource the lock protects. A rejected request wraps
// store.ErrRejected.
type Store interface {
	Read(ctx context.Context, r store.Request) (store.Response, error)
	Write(ctx context.Context, r store.Request) error
}

// Workloads this package runs.
const (
	// CounterKind: read x, write x+1.
	CounterKind = "counter"
	// SetKind: read a set, add an element no one else adds, write it back
	// (Jepsen's lock-set).
	SetKind = "set"
)

// Config configures one client.
type Config struct {
	Kind    string
	Process string // "c1", "c2", …
	// ID numbers the client; it makes the set workload's elements unique.
	ID  int64
	Key string
	// Work draws the work done between read and write.
	Work Work
	// Think draws the time between a release and the next acquire; the
	// zero Work is none.
	Think Work
	// AcquireTimeout bounds one wait for the lock.
	AcquireTimeout time.Duration
	// OpTimeout bounds each store request and each release.
	OpTimeout time.Duration
	Epoch     int64 // the run's start on the monotonic clock
	// CAS makes each write conditional on the version read, in place of a
	// lock.
	CAS bool
	// CheckLease skips the write when the client already knows its lease
	// is lost.
	CheckLease bool
	// FailOpen runs the section without the lock when the lock service
	// could not be reached (an acquire whose outcome is unknown), as a
	// fail-open client does; otherwise the client skips the section.
	FailOpen bool
	// Failpoint holds the client at FailSection when the nemesis armed it.
	Failpoint locks.Failpoint
	Rand      *rand.Rand
}

// FailSection is the point where the holder has read the value and is
// about to work: a client struck here has a whole section's work left, so
// it has time to learn that its lease is gone before it writes.
const FailSection = "section"

// Run loops acquire → read → work → write → release until stop is done,
// finishing the cycle in progress. Each step is an invoke followed by ok (it
// happened), fail (it certainly did not) or info (unknown). With a nil lock
// the client enters the section without one.
func Run(stop context.Context, cfg Config, lock locks.Locker, st Store, emit func(history.Event)) {
	c := &counter{cfg: cfg, lock: lock, st: st, emit: emit}
	for stop.Err() == nil {
		c.cycle(stop)
		c.think(stop)
	}
}

// think waits between a release and the next acquire: real lock users do
// not take a lock back to back, and without a pause the lock is almost
// never free, which hides bugs that need it free (an extend that re-acquires
// a key that is gone). No think time draws nothing, so the other random
// choices of a seed stay what they were.
func (c *counter) think(stop context.Context) {
	if c.cfg.Think == (Work{}) {
		return
	}
	sleepCtx(stop, c.cfg.Think.Draw(c.cfg.Rand))
}

type counter struct {
	cfg  Config
	lock locks.Locker
	st   Store
	emit func(history.Event)
	req  int
	// added counts the set elements this client has tried to add.
	added int64
	// mu orders stamping and emitting: the lease watcher emits from its own
	// goroutine, and a time taken outside the lock could be written after a
	// later one, making the client's record run backwards in time.
	mu sync.Mutex
}

func (c *counter) event(t history.Type, f string, e history.Event) history.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.Time = history.Mono() - c.cfg.Epoch
	e.Process = c.cfg.Process
	e.Type = t
	e.F = f
	c.emit(e)
	return e
}

// outcome classifies an error the way Jepsen does: only an error that proves
// the step had no effect is a failure.
func outcome(err error, definite ...error) history.Type {
	if err == nil {
		return history.OK
	}
	for _, d := range definite {
		if errors.Is(err, d) {
			return history.Fail
		}
	}
	return history.Info
}

// unreachablePause is how long a client waits after an attempt to acquire
// that failed, whatever the reason (see cycle).
const unreachablePause = 20 * time.Millisecond

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *counter) cycle(stop context.Context) {
	if c.lock == nil {
		c.section(unlocked{}, 0)
		return
	}
	c.event(history.Invoke, history.Acquire, history.Event{})
	actx, cancel := context.WithTimeout(stop, c.cfg.AcquireTimeout)
	lease, err := c.lock.Acquire(actx)
	cancel()
	if err != nil {
		typ := outcome(err, locks.ErrNotAcquired)
		c.event(typ, history.Acquire, history.Event{Error: err.Error()})
		// Only a service that could not be reached opens the section: a
		// lock that was certainly not granted is someone else's.
		if typ == history.Info && c.cfg.FailOpen && stop.Err() == nil {
			c.section(unlocked{}, 0)
			return
		}
		// A lock service that cannot be reached may fail each attempt at
		// once (go-redis returns its last dial error without dialing
		// while its dials keep failing, as when a killed node's container
		// restarts): without a pause the client would record hundreds of
		// thousands of attempts a second.
		sleepCtx(stop, unreachablePause)
		return
	}
	token, _ := lease.Token()
	sent, ttl := lease.Granted()
	c.event(history.OK, history.Acquire, history.Event{Token: token, Attempt: sent, TTL: int64(ttl)})

	sectionDone := make(chan struct{})
	watched := make(chan struct{})
	go c.watchLease(lease, token, sectionDone, watched)

	c.section(lease, token)

	close(sectionDone)
	<-watched
	c.event(history.Invoke, history.Release, history.Event{Token: token})
	rctx, cancel := context.WithTimeout(context.Background(), c.cfg.OpTimeout)
	err = lease.Release(rctx)
	cancel()
	c.event(outcome(err, locks.ErrNotHeld), history.Release, history.Event{Token: token, Error: errText(err)})
}

// watchLease records the moment the client learns its lease is gone, while
// the section still runs: the point where a careful client would stop.
func (c *counter) watchLease(lease locks.Lease, token int64, sectionDone, watched chan struct{}) {
	defer close(watched)
	select {
	case <-lease.Lost():
		c.event(history.Info, history.LeaseLost, history.Event{Token: token})
	case <-sectionDone:
	}
}

func (c *counter) section(lease locks.Lease, token int64) {
	req := c.request(token, 0)
	c.event(history.Invoke, history.Read, history.Event{Key: req.Key, Token: token, Req: req.Req})
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.OpTimeout)
	got, err := c.st.Read(ctx, req)
	cancel()
	if err != nil {
		c.event(outcome(err, store.ErrRejected), history.Read, history.Event{Key: req.Key, Token: token, Req: req.Req, Error: err.Error()})
		return
	}
	read := history.Event{Key: req.Key, Token: token, Req: req.Req, Value: history.Int(got.Value)}
	if c.cfg.Kind == SetKind {
		read.Value, read.Set = nil, got.Set
	}
	c.event(history.OK, history.Read, read)

	if c.cfg.Failpoint != nil {
		c.cfg.Failpoint(FailSection)
	}
	time.Sleep(c.cfg.Work.Draw(c.cfg.Rand))

	// Like most lock users (and Jepsen's lock clients), the client writes
	// without asking again whether its lease still holds. CheckLease adds
	// that check: it narrows the window, but a pause that lands after it
	// still lets a stale write through.
	if c.cfg.CheckLease {
		select {
		case <-lease.Lost():
			return
		default:
		}
	}
	req = c.request(token, got.Value+1)
	if c.cfg.CAS {
		req.IfVersion = &got.Version
	}
	write := history.Event{Key: req.Key, Token: token, Req: req.Req, Value: history.Int(req.Value)}
	if c.cfg.Kind == SetKind {
		c.added++
		element := c.cfg.ID*elementsPerClient + c.added
		req.Value, req.Set = 0, append(slices.Clone(got.Set), element)
		write.Value, write.Set = history.Int(element), req.Set
	}
	c.event(history.Invoke, history.Write, write)
	ctx, cancel = context.WithTimeout(context.Background(), c.cfg.OpTimeout)
	err = c.st.Write(ctx, req)
	cancel()
	// The invocation already names the whole set.
	write.Set, write.Error = nil, errText(err)
	c.event(outcome(err, store.ErrRejected), history.Write, write)
}

// elementsPerClient spaces the clients' elements so they never collide.
const elementsPerClient = 1_000_000_000

func (c *counter) request(token, value int64) store.Request {
	c.req++
	return store.Request{
		Req: fmt.Sprintf("%s-%d", c.cfg.Process, c.req), Client: c.cfg.Process,
		Key: c.cfg.Key, Token: token, Value: value,
	}
}

// NewTrace records a client's lease renewals under its lease process
// (history.LeaseProcess), on the run's clock: an invoke as each renewal is
// sent, then ok with the TTL granted, fail (certainly not renewed) or info.
// The lease process has its own name because renewals run beside the
// client's operations, and a history pairs each process's events by
// position.
func NewTrace(cfg Config, emit func(history.Event)) locks.Trace {
	return &trace{epoch: cfg.Epoch, process: history.LeaseProcess(cfg.Process), emit: emit}
}

type trace struct {
	epoch   int64
	process string
	emit    func(history.Event)
	// mu orders stamping and emitting, as counter.mu does.
	mu sync.Mutex
}

func (t *trace) Now() int64 { return history.Mono() - t.epoch }

func (t *trace) event(typ history.Type, e history.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.Time, e.Process, e.Type, e.F = t.Now(), t.process, typ, history.Renew
	t.emit(e)
}

func (t *trace) Renew() func(time.Duration, error) {
	t.event(history.Invoke, history.Event{})
	return func(ttl time.Duration, err error) {
		e := history.Event{Error: errText(err)}
		if err == nil {
			e.TTL = int64(ttl)
		}
		t.event(outcome(err, locks.ErrNotHeld), e)
	}
}

// unlocked is the lease of a client that took no lock: it is never lost.
type unlocked struct{}

func (unlocked) Token() (int64, bool)            { return 0, false }
func (unlocked) Lost() <-chan struct{}           { return nil }
func (unlocked) Release(context.Context) error   { return nil }
func (unlocked) Granted() (int64, time.Duration) { return 0, 0 }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
