// Package simulate generates long runs shaped like real ones, for the
// checkers' benchmarks and tests and for the benchmark of a whole check.
// The fuzz generator (checkers/generate_fuzz_test.go) does not make them:
// it draws every choice from a few fuzzer bytes and stops after a dozen
// sections. This one simulates the counter and set workloads
// (workloads.Run) on a clock: C clients loop acquire → read → work → write
// → release against a lock that grants one of the waiting clients at a
// time, with a store that fences nothing. Each client always has its next
// acquire outstanding, so with 50 clients 49 acquires overlap every
// section, as under real contention.
package simulate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// Spec describes a generated run.
type Spec struct {
	Events  int // about this many history events
	Clients int
	// Stale injects stale holders: a client paused between its read and its
	// write past its lease, whose write the store accepts after newer
	// holders wrote. Each makes the run fail linearizability, fence and
	// lost-updates.
	Stale bool
	// Set runs the set workload: each section adds one element to a set.
	Set bool
}

// Run is a generated run: its history in time order, numbered, and its
// store's log in the order the store applied the requests.
type Run struct {
	History []history.Event
	Store   []store.Entry
}

// Timings of the simulated run, in nanoseconds.
const (
	simStep      = 1_000_000     // a request or grant takes up to this long
	simWork      = 2_000_000     // work between read and write, at most
	simThink     = 100_000       // a client asks again this soon after release
	simOpTimeout = 200_000_000   // a store request times out after this long
	LeaseTTL     = 1_000_000_000 // the lock frees a paused holder's lease after this
	simPause     = 2_000_000_000 // how long the nemesis pauses a stale holder
	// simUnknownEvery sections, one write times out; half of those reach
	// the store before the client gives up, half never do. Both are clean:
	// the client still holds its lease until it releases.
	simUnknownEvery = 1000
	// simStaleEvery events, one stale holder, when spec.Stale.
	simStaleEvery = 20_000
)

// simClient is one workload client.
type simClient struct {
	name string
	id   int64
	// askedAt is when its outstanding acquire was invoked; busy clients
	// (holding, or paused as a stale holder) have none.
	askedAt int64
	busy    bool
	reqs    int
	added   int64 // set elements it has tried to add
}

type simRun struct {
	spec    Spec
	rng     *rand.Rand
	clients []*simClient
	h       []history.Event
	log     []store.Entry

	token int64
	// The store's state; applies happen in time order.
	value int64
	set   []int64
	// late holds stale writes on their way to the store, in time order.
	late   []func()
	lateAt []int64
}

// Generate simulates spec; the same spec always gives the same run.
func Generate(spec Spec) Run {
	r := &simRun{spec: spec, rng: rand.New(rand.NewPCG(uint64(spec.Events), uint64(spec.Clients)))}
	for i := range spec.Clients {
		c := &simClient{name: fmt.Sprintf("c%d", i+1), id: int64(i + 1)}
		r.clients = append(r.clients, c)
		r.ask(c, r.between(0, simStep))
	}
	sections := spec.Events / 8
	staleAt := map[int]bool{}
	if spec.Stale {
		k := max(1, spec.Events/simStaleEvery)
		for i := range k {
			staleAt[(2*i+1)*sections/(2*k)] = true
		}
	}
	var free int64 // when the lock is next free
	for s := 0; s < sections; s++ {
		c := r.nextHolder(free)
		granted := max(free, c.askedAt) + r.between(simStep/4, simStep)
		r.token++
		// The granting attempt left a quarter step before the grant, at
		// the earliest when the client asked.
		r.emit(c.name, history.OK, history.Acquire, granted, history.Event{Token: r.token, Attempt: granted - simStep/4, TTL: LeaseTTL})
		c.busy = true
		if staleAt[s] {
			free = r.staleHolder(c, granted)
			continue
		}
		free = r.section(c, granted, r.token, s%simUnknownEvery == simUnknownEvery/2)
	}
	end := free
	for len(r.late) > 0 {
		end = max(end, r.lateAt[0])
		r.land()
	}
	// The run stops: acquires still waiting are cancelled.
	for _, c := range r.clients {
		if !c.busy {
			r.emit(c.name, history.Info, history.Acquire, max(end, c.askedAt)+r.between(1, simStep), history.Event{Error: "context canceled"})
		}
	}

	// Each client records its own events in order; the file interleaves
	// them by time.
	slices.SortStableFunc(r.h, func(a, b history.Event) int { return int(a.Time - b.Time) })
	for i := range r.h {
		r.h[i].Index = int64(i)
	}
	slices.SortStableFunc(r.log, func(a, b store.Entry) int { return int(a.Time - b.Time) })
	for i := range r.log {
		r.log[i].Seq = int64(i)
	}
	return Run{History: r.h, Store: r.log}
}

// String names a spec in benchmarks and subtests.
func (s Spec) String() string {
	kind := "clean"
	if s.Stale {
		kind = "stale"
	}
	workload := ""
	if s.Set {
		workload = "set/"
	}
	events := strconv.Itoa(s.Events)
	if e := int(math.Round(math.Log10(float64(s.Events)))); math.Pow10(e) == float64(s.Events) {
		events = fmt.Sprintf("1e%d", e)
	}
	return fmt.Sprintf("%sevents=%s/clients=%d/%s", workload, events, s.Clients, kind)
}

// Encode writes the run's history and store log as a run writes them, one
// JSON object a line (history.Writer, store.Server).
func (run Run) Encode(historyOut, storeOut io.Writer) error {
	h, l := bufio.NewWriter(historyOut), bufio.NewWriter(storeOut)
	for _, e := range run.History {
		line, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
		h.Write(append(line, '\n'))
	}
	for _, e := range run.Store {
		line, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode store entry: %w", err)
		}
		l.Write(append(line, '\n'))
	}
	return errors.Join(h.Flush(), l.Flush())
}

// WriteFiles writes the run's history and store log to the two paths.
func (run Run) WriteFiles(historyPath, storePath string) error {
	h, err := os.Create(historyPath)
	if err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	defer h.Close()
	l, err := os.Create(storePath)
	if err != nil {
		return fmt.Errorf("write store log: %w", err)
	}
	defer l.Close()
	return errors.Join(run.Encode(h, l), h.Close(), l.Close())
}

func (r *simRun) between(lo, hi int64) int64 { return lo + r.rng.Int64N(hi-lo+1) }

func (r *simRun) emit(p string, typ history.Type, f string, t int64, e history.Event) {
	e.Time, e.Process, e.Type, e.F = t, p, typ, f
	r.h = append(r.h, e)
}

// ask has c invoke acquire at t.
func (r *simRun) ask(c *simClient, t int64) {
	c.askedAt, c.busy = t, false
	r.emit(c.name, history.Invoke, history.Acquire, t, history.Event{})
}

// nextHolder picks the client the lock grants once it is free: any of those
// already waiting (locks are not fair), else the first to ask.
func (r *simRun) nextHolder(free int64) *simClient {
	var waiting []*simClient
	var first *simClient
	for _, c := range r.clients {
		if c.busy {
			continue
		}
		if c.askedAt <= free {
			waiting = append(waiting, c)
		}
		if first == nil || c.askedAt < first.askedAt {
			first = c
		}
	}
	if len(waiting) > 0 {
		return waiting[r.rng.IntN(len(waiting))]
	}
	return first
}

func (r *simRun) req(c *simClient) string {
	c.reqs++
	return fmt.Sprintf("%s-%d", c.name, c.reqs)
}

// land applies the oldest stale write.
func (r *simRun) land() {
	f := r.late[0]
	r.late, r.lateAt = r.late[1:], r.lateAt[1:]
	f()
}

// apply is store.Server.Apply with fence none, at time t; it returns the
// entry it logged.
func (r *simRun) apply(c *simClient, op, req string, token, t int64, value int64, set []int64) store.Entry {
	for len(r.lateAt) > 0 && r.lateAt[0] <= t {
		r.land()
	}
	e := store.Entry{Time: t, Req: req, Client: c.name, Op: op, Key: "x", Token: token, Prev: r.value, Outcome: store.Accepted}
	if op == "write" {
		e.Value, e.Set = value, set
		r.value = value
		if r.spec.Set {
			r.set = set
		}
	} else {
		e.Value, e.Set = r.value, r.set
	}
	r.log = append(r.log, e)
	return e
}

// read is c's read at t; it returns the entry and when the client got it.
func (r *simRun) read(c *simClient, token, t int64) (store.Entry, int64) {
	req := r.req(c)
	ev := history.Event{Key: "x", Token: token, Req: req}
	r.emit(c.name, history.Invoke, history.Read, t, ev)
	applied := t + r.between(simStep/10, simStep/2)
	e := r.apply(c, "read", req, token, applied, 0, nil)
	if r.spec.Set {
		ev.Set = e.Set
	} else {
		ev.Value = history.Int(e.Value)
	}
	done := applied + r.between(simStep/10, simStep/2)
	r.emit(c.name, history.OK, history.Read, done, ev)
	return e, done
}

// write invokes c's write of what it computed from read at t. It returns
// the event to complete it with and the store write, which the caller
// applies when it reaches the store.
func (r *simRun) write(c *simClient, read store.Entry, token, t int64) (history.Event, func(at int64)) {
	req := r.req(c)
	ev := history.Event{Key: "x", Token: token, Req: req}
	value := read.Value + 1
	var set []int64
	if r.spec.Set {
		c.added++
		element := c.id*1_000_000_000 + c.added
		set = append(slices.Clone(read.Set), element)
		value = 0
		ev.Value, ev.Set = history.Int(element), set
	} else {
		ev.Value = history.Int(value)
	}
	r.emit(c.name, history.Invoke, history.Write, t, ev)
	ev.Set = nil // the invocation already names the whole set
	return ev, func(at int64) { r.apply(c, "write", req, token, at, value, set) }
}

// section runs c's critical section from its grant at t; it returns when
// the lock is free again.
func (r *simRun) section(c *simClient, t, token int64, timeout bool) int64 {
	read, t := r.read(c, token, t+r.between(simStep/10, simStep/2))
	t += r.between(0, simWork)
	ev, apply := r.write(c, read, token, t)
	switch {
	case !timeout:
		t += r.between(simStep/10, simStep/2)
		apply(t)
		t += r.between(simStep/10, simStep/2)
		r.emit(c.name, history.OK, history.Write, t, ev)
	default:
		if r.rng.IntN(2) == 0 {
			apply(t + r.between(simStep/10, simStep/2))
		}
		t += simOpTimeout
		ev.Error = "timeout"
		r.emit(c.name, history.Info, history.Write, t, ev)
	}
	return r.release(c, token, t, false)
}

// release runs c's release from t; it returns when the lock is free.
func (r *simRun) release(c *simClient, token, t int64, lost bool) int64 {
	t += r.between(simStep/10, simStep/2)
	r.emit(c.name, history.Invoke, history.Release, t, history.Event{Token: token})
	freed := t + r.between(simStep/10, simStep/2)
	done := freed + r.between(simStep/10, simStep/2)
	if lost {
		r.emit(c.name, history.Fail, history.Release, done, history.Event{Token: token, Error: "not held"})
	} else {
		r.emit(c.name, history.OK, history.Release, done, history.Event{Token: token})
	}
	r.ask(c, done+r.between(0, simThink))
	return freed
}

// staleHolder runs the section fencing exists for: c reads, is paused past
// its lease while others hold the lock, then resumes and writes what it
// computed before the pause. It returns when the lock frees c's lease.
func (r *simRun) staleHolder(c *simClient, granted int64) int64 {
	token := r.token
	read, t := r.read(c, token, granted+r.between(simStep/10, simStep/2))
	paused := t + r.between(0, simWork)
	r.emit(history.Nemesis, history.Info, history.Start, paused, history.Event{Fault: "pause", Targets: []string{c.name}})
	resumed := paused + simPause
	r.emit(history.Nemesis, history.Info, history.Stop, resumed, history.Event{Fault: "pause", Targets: []string{c.name}})
	// The watcher and the section resume together: the loss is noticed
	// after the lease check, so the write still goes out.
	r.emit(c.name, history.Info, history.LeaseLost, resumed+r.between(1, simStep/10), history.Event{Token: token})
	t = resumed + r.between(simStep/10, simStep/2)
	ev, apply := r.write(c, read, token, t)
	landed := t + r.between(simStep/10, simStep/2)
	r.late = append(r.late, func() { apply(landed) })
	r.lateAt = append(r.lateAt, landed)
	t = landed
	t += r.between(simStep/10, simStep/2)
	r.emit(c.name, history.OK, history.Write, t, ev)
	r.release(c, token, t, true)
	return granted + LeaseTTL
}
