package checkers

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// The checker fuzz targets do not feed the fuzzer's bytes to the checkers as
// JSON, which would mostly explore syntax: the bytes are a program for a
// small simulation of the counter workload (clients, a lock, a fencing store,
// a nemesis), so every input is a history and store log the harness could
// plausibly have recorded, and mutating a byte changes what happened in the
// run. The simulation knows when it produced a clean run or injected a stale
// write, which is what lets the targets check verdicts and not just crashes.
//
// A program may also start from a golden run and continue it. The golden
// runs are picked by number rather than passed as fuzz arguments: as raw
// bytes, nearly every mutation made them undecodable, and minimizing each
// new JSON syntax error the fuzzer hit took up nearly all of a short run.

// program hands out the fuzzer's bytes. Past the end it reads 0, which every
// choice maps to the plain path, so every input is a complete program.
type program struct{ b []byte }

func (p *program) next() int {
	if len(p.b) == 0 {
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return int(c)
}

func (p *program) pick(n int) int { return p.next() % n }

// Flags in a program's first byte.
const (
	// genClean makes a clean serial run: at most one client holds the lock
	// at a time, tokens grow, the store log matches the history. Every
	// safety checker must pass it.
	genClean = 1 << iota
	// genStale makes a clean run plus one write by a paused client that the
	// store accepts after it accepted a newer token (it wins over
	// genClean). Fence must fail it.
	genStale
	// genNoTokens makes a lock without fencing tokens (ignored with
	// genClean and genStale, whose promises need tokens).
	genNoTokens
	// genAllKeys sets Input.Key to "", which takes every key.
	genAllKeys
	// genOtherKey puts some sections on key y, which Key "x" must ignore.
	genOtherKey
	genFenceWrites
	genFenceAll
	// genBase continues the golden run the next byte picks.
	genBase
)

// maxRounds bounds the sections a program generates, so the
// linearizability search stays far below the targets' timeout.
const maxRounds = 12

// fuzzCase is one generated run and what its generator promises about it.
type fuzzCase struct {
	in Input
	// clean: the run is a clean serial run and had no base history.
	clean bool
	// misrecorded: the history says one of the writes the store logged
	// wrote another value than the log says (a clean run otherwise).
	// Neither record can then be trusted: the linearizability and the
	// lost-updates checkers must be unknown.
	misrecorded bool
	// stale: a stale write was accepted after a newer token (base or not).
	stale bool
	// fresh: there is no base history, every event came from the program.
	fresh bool
	// grants is how many acquires succeeded with a token.
	grants int
	// lost is what the lost-updates checker must count, worked out from
	// the simulation's own read-from (which write each read returned, as
	// the simulated store knew it) rather than from log positions; set
	// for clean runs and for fresh runs with a stale write.
	lost map[string]int64
}

// buildCase runs prog, which may continue one of bases.
func buildCase(bases []Input, prog []byte) fuzzCase {
	g := newGen(bases, prog)
	g.run()
	return g.c
}

type gen struct {
	src *program
	c   fuzzCase

	clients []string
	rounds  int
	staleAt int // round before which the stale write goes, or -1
	tokens  bool
	keys    []string // keys sections use

	now, index, seq int64
	token           int64 // the last token the lock handed out

	// The store's state, kept by the same rules as store.Server.Apply.
	fence            store.Fence
	values           map[string]int64
	maxWrite, maxAny map[string]int64
	reqs             map[string]int  // per client, for unique req ids
	baseReqs         map[string]bool // the reqs of the base run, never reused
	waiting          map[string]bool // clients whose acquire is not yet answered
	paused           string          // client the nemesis has paused, if any
	// inflight holds requests that timed out at their client but have yet
	// to reach the store.
	inflight []func()

	// Where the base run ends: generated events and entries come after.
	baseEvents int
	baseSeq    int64

	// Read-from as the simulated store knows it: cur is each key's last
	// accepted write ("" for the initial 0); readOf is each client's last
	// read; writeRead the read each write was computed from; readFrom
	// the write each accepted read returned; parent the same for each
	// accepted write.
	cur, readOf, writeRead, readFrom, parent map[string]string
}

func newGen(bases []Input, prog []byte) *gen {
	g := &gen{
		src:    &program{b: prog},
		values: map[string]int64{}, maxWrite: map[string]int64{}, maxAny: map[string]int64{},
		reqs: map[string]int{}, waiting: map[string]bool{},
		cur: map[string]string{}, readOf: map[string]string{}, writeRead: map[string]string{},
		readFrom: map[string]string{}, parent: map[string]string{},
	}
	flags := g.src.next()
	var base Input
	if flags&genBase != 0 && len(bases) > 0 {
		base = cloneInput(bases[g.src.pick(len(bases))])
	}
	g.c.fresh = len(base.History) == 0 && len(base.Store) == 0
	g.c.clean = flags&genClean != 0 && flags&genStale == 0 && g.c.fresh
	g.c.stale = flags&genStale != 0
	g.tokens = flags&genNoTokens == 0 || flags&(genClean|genStale) != 0
	g.fence = store.FenceNone
	switch {
	case flags&genFenceAll != 0 && !g.c.stale:
		// A store that fences reads too would reject the injected write.
		g.fence = store.FenceAll
	case flags&genFenceWrites != 0:
		g.fence = store.FenceWrites
	}
	g.c.in.Key = "x"
	g.c.in.Lease = Lease{TTL: genTTL, SlackFixed: 1e6, SlackPPM: 500}
	g.keys = []string{"x"}
	switch {
	case flags&genAllKeys != 0:
		// One counter only: with Key "" every key counts as the counter.
		g.c.in.Key = ""
	case flags&genOtherKey != 0:
		g.keys = []string{"x", "x", "x", "y"}
	}
	g.rounds = 1 + g.src.pick(maxRounds)
	g.clients = []string{"c1", "c2", "c3", "c4"}[:1+g.src.pick(4)]
	g.staleAt = -1
	if g.c.stale {
		g.staleAt = g.src.pick(g.rounds + 1)
	}

	// Continue the base run: later times, indexes, seqs and tokens, and the
	// store state its log leaves behind.
	g.c.in.History, g.c.in.Store = base.History, base.Store
	g.baseReqs = map[string]bool{}
	for _, e := range base.History {
		g.baseReqs[e.Req] = true
		g.now = max(g.now, e.Time)
		g.index = max(g.index, e.Index+1)
		g.token = max(g.token, e.Token)
	}
	for _, e := range base.Store {
		g.now = max(g.now, e.Time)
		g.seq = max(g.seq, e.Seq+1)
		g.token = max(g.token, e.Token)
		if e.Outcome != store.Accepted {
			continue
		}
		if e.Op == "write" {
			g.values[e.Key] = e.Value
			g.maxWrite[e.Key] = max(g.maxWrite[e.Key], e.Token)
		}
		g.maxAny[e.Key] = max(g.maxAny[e.Key], e.Token)
	}
	g.now += 1e6
	g.baseEvents, g.baseSeq = len(base.History), g.seq
	return g
}

// genTTL is the generated lock's lease: the runs' clock steps are
// milliseconds to a second, so leases outlast some sections and not others.
const genTTL = 2e9

func (g *gen) run() {
	for r := 0; r < g.rounds; r++ {
		if r == g.staleAt {
			g.staleWrite()
		}
		g.nemesis()
		if g.free() && g.src.pick(4) == 3 {
			g.splitBrain()
			continue
		}
		g.section()
	}
	if g.staleAt == g.rounds {
		g.staleWrite()
	}
	for len(g.inflight) > 0 {
		g.land()
	}
	if !g.c.stale {
		g.crash()
	}
	g.jostle()
	if g.c.clean || (g.c.stale && g.c.fresh) {
		g.c.lost = g.expectLost()
	}
	if g.c.clean && g.src.pick(8) == 7 {
		g.misrecord()
	}
	g.c.grants = 0
	for _, e := range g.c.in.History {
		if e.F == history.Acquire && e.Type == history.OK && e.Token > 0 {
			g.c.grants++
		}
	}
	if g.free() {
		g.mutate()
	}
}

// free reports whether the run makes no promise, so anything goes.
func (g *gen) free() bool { return !g.c.clean && !g.c.stale }

// land applies the oldest request that timed out at its client but is still
// on its way to the store.
func (g *gen) land() {
	g.inflight[0]()
	g.inflight = g.inflight[1:]
}

// crash sometimes ends the run as a killed harness does, losing the tail of
// the history, and trims the store log to the requests the history still
// knows, as the runner does before it checks such a run.
func (g *gen) crash() {
	if g.src.pick(4) != 3 {
		return
	}
	h := g.c.in.History
	h = h[:max(len(h)-1-g.src.pick(8), g.baseEvents)]
	known := map[string]bool{}
	for _, e := range h {
		known[e.Req] = true
	}
	g.c.in.History = h
	g.c.in.Store = slices.DeleteFunc(g.c.in.Store, func(e store.Entry) bool {
		return e.Seq >= g.baseSeq && !known[e.Req]
	})
}

// jostle swaps a few neighbouring events of different processes: the
// harness records events from many goroutines, so a history is in time
// order only nearly, and only each process's own events are in order.
// Indexes stay in file order, as the history writer numbers them.
func (g *gen) jostle() {
	for n := g.src.pick(4); n > 0; n-- {
		h := g.c.in.History
		if len(h)-g.baseEvents < 2 {
			return
		}
		i := g.baseEvents + g.src.pick(len(h)-g.baseEvents-1)
		if h[i].Process != h[i+1].Process {
			h[i], h[i+1] = h[i+1], h[i]
			h[i].Index, h[i+1].Index = h[i+1].Index, h[i].Index
		}
	}
}

// tick advances the clock; equal times happen, as on a coarse clock.
func (g *gen) tick() int64 {
	steps := []int64{1, 2, 3, 5, 10, 50, 0, 1000}
	g.now += steps[g.src.pick(len(steps))] * 1e6
	return g.now
}

func (g *gen) emit(p string, typ history.Type, f string, e history.Event) history.Event {
	e.Index, e.Time, e.Process, e.Type, e.F = g.index, g.tick(), p, typ, f
	g.index++
	g.c.in.History = append(g.c.in.History, e)
	return e
}

// req is a new req for p: a req names one request, in the generated run as
// in the base it continues.
func (g *gen) req(p string) string {
	for {
		g.reqs[p]++
		if req := fmt.Sprintf("%s-g%d", p, g.reqs[p]); !g.baseReqs[req] {
			return req
		}
	}
}

// apply is store.Server.Apply without the file and the clock.
func (g *gen) apply(client, op, key string, token, value int64, req string) store.Entry {
	prev := g.values[key]
	e := store.Entry{
		Seq: g.seq, Time: g.tick(), Req: req, Client: client,
		Op: op, Key: key, Token: token, Prev: prev, Outcome: store.Accepted,
	}
	seen := g.maxAny[key]
	if g.fence == store.FenceWrites {
		seen = g.maxWrite[key]
	}
	e.MaxToken = seen
	checked := g.fence == store.FenceAll || (g.fence == store.FenceWrites && op == "write")
	if checked && token < seen {
		e.Outcome = store.Rejected
		e.Reason = fmt.Sprintf("stale token %d < %d", token, seen)
	}
	e.Value = prev
	if op == "write" {
		e.Value = value
	}
	if e.Outcome == store.Accepted {
		if op == "read" {
			g.readFrom[req] = g.cur[key]
		}
		if op == "write" {
			g.parent[req] = g.readFrom[g.writeRead[req]]
			g.cur[key] = req
			g.values[key] = value
			g.maxWrite[key] = max(g.maxWrite[key], token)
		}
		g.maxAny[key] = max(g.maxAny[key], token)
	}
	g.seq++
	g.c.in.Store = append(g.c.in.Store, e)
	return e
}

func (g *gen) client() string { return g.clients[g.src.pick(len(g.clients))] }

// two picks distinct clients for a run that needs two holders.
func (g *gen) two() (string, string) {
	all := []string{"c1", "c2", "c3", "c4"}
	a := g.src.pick(max(len(g.clients), 2))
	b := (a + 1 + g.src.pick(max(len(g.clients), 2)-1)) % max(len(g.clients), 2)
	return all[a], all[b]
}

// contend has another client start waiting for the lock, so acquires
// overlap as they do under contention.
func (g *gen) contend(holder string) {
	if g.src.pick(4) != 1 {
		return
	}
	q := g.client()
	if q == holder || g.waiting[q] {
		return
	}
	g.emit(q, history.Invoke, history.Acquire, history.Event{})
	g.waiting[q] = true
}

// acquire asks for the lock for p; force makes the lock grant it.
func (g *gen) acquire(p string, force bool) (int64, bool) {
	if !g.waiting[p] {
		g.emit(p, history.Invoke, history.Acquire, history.Event{})
	}
	delete(g.waiting, p)
	switch c := g.src.pick(8); {
	case force || c < 6:
	case c == 6:
		g.emit(p, history.Fail, history.Acquire, history.Event{Error: "not acquired"})
		return 0, false
	default:
		g.emit(p, history.Info, history.Acquire, history.Event{Error: "timeout"})
		return 0, false
	}
	var tok int64
	if g.tokens {
		// A lock may skip numbers, e.g. for a grant whose answer was lost.
		g.token += 1 + int64(g.src.pick(4)/3)
		tok = g.token
		g.c.grants++
	}
	// The granting attempt was sent after the last thing that happened;
	// a client that cannot tell when it sent it records none, and its
	// invocation bounds the lease instead.
	ok := history.Event{Token: tok, Attempt: g.now, TTL: genTTL}
	switch g.src.pick(8) {
	case 5:
		ok.Attempt = 0
	case 6, 7:
		if !force {
			// The reply comes late, past the lease the attempt began: the
			// holding has no certain window at all, and nothing overlaps
			// it in a serial run.
			g.now += genTTL + 500e6
		}
	}
	g.emit(p, history.OK, history.Acquire, ok)
	return tok, true
}

// request runs a read or a write the way the workload records it: ok if
// the store accepted it, fail if it rejected it, info on a timeout, after
// which the request may or may not have reached the store. during runs
// between the invocation and the completion.
func (g *gen) request(p, op, key string, tok, value int64, force bool, during func()) (store.Entry, bool) {
	req := g.req(p)
	ev := history.Event{Key: key, Token: tok, Req: req}
	if op == "write" {
		ev.Value = history.Int(value)
	}
	f := history.Read
	if op == "write" {
		f = history.Write
		g.writeRead[req] = g.readOf[p]
	} else {
		g.readOf[p] = req
	}
	if len(g.inflight) > 0 && g.src.pick(3) == 0 {
		g.land()
	}
	g.emit(p, history.Invoke, f, ev)
	mode := 0
	if !force {
		mode = g.src.pick(10)
	}
	if during != nil {
		during()
	}
	var e store.Entry
	switch {
	case mode != 9:
		e = g.apply(p, op, key, tok, value, req)
	case g.free() && g.src.pick(2) == 1:
		// Slow rather than lost: it reaches the store after the client gave
		// up on it, maybe after other clients' requests.
		g.inflight = append(g.inflight, func() { g.apply(p, op, key, tok, value, req) })
	}
	if mode >= 8 {
		ev.Error = "timeout"
		g.emit(p, history.Info, f, ev)
		return e, false
	}
	if e.Outcome == store.Rejected {
		ev.Error = "stale token: " + e.Reason
		g.emit(p, history.Fail, f, ev)
		return e, false
	}
	if op == "read" {
		ev.Value = history.Int(e.Value)
	}
	g.emit(p, history.OK, f, ev)
	return e, true
}

func (g *gen) release(p string, tok int64, lost bool) {
	g.emit(p, history.Invoke, history.Release, history.Event{Token: tok})
	switch {
	case lost:
		g.emit(p, history.Fail, history.Release, history.Event{Token: tok, Error: "not held"})
	case g.src.pick(8) == 7:
		g.emit(p, history.Info, history.Release, history.Event{Token: tok, Error: "timeout"})
	default:
		g.emit(p, history.OK, history.Release, history.Event{Token: tok})
	}
}

// Where in a section the client learns its lease is gone. The workload
// checks the lease after the read, so a loss noticed before that check
// stops the write and one noticed after it does not.
const (
	lostNever = iota
	lostBeforeRead
	lostDuringRead
	lostBeforeCheck
	lostAfterCheck
	lostDuringWrite
	lostAfterWrite
)

// section is one cycle of the counter workload by one client.
func (g *gen) section() {
	p := g.client()
	key := g.keys[g.src.pick(len(g.keys))]
	g.contend(p)
	tok, ok := g.acquire(p, false)
	if !ok {
		return
	}
	where := g.src.pick(16)
	emitted := false
	lose := func(at int) {
		if where == at && !emitted {
			emitted = true
			g.emit(p, history.Info, history.LeaseLost, history.Event{Token: tok})
		}
	}
	lose(lostBeforeRead)
	read, ok := g.request(p, "read", key, tok, 0, false, func() { lose(lostDuringRead) })
	if ok {
		lose(lostBeforeCheck)
		if !emitted {
			lose(lostAfterCheck)
			g.request(p, "write", key, tok, read.Value+1, false, func() { lose(lostDuringWrite) })
			lose(lostAfterWrite)
		}
	}
	// The watcher reports a lost lease before the client releases.
	if where > lostNever && where <= lostAfterWrite && !emitted {
		where = lostAfterWrite
		lose(where)
	}
	if g.c.clean && len(g.clients) > 1 && g.paused == "" && g.src.pick(8) == 7 {
		g.kill(p)
		return
	}
	g.release(p, tok, emitted)
}

// kill has the nemesis SIGKILL the holder p instead of its release: p's
// record ends there, holding the lock, and no one may be granted it until
// its lease has run out; the clock goes past that (a lease granted by an
// attempt sent at the latest now). A serial run stays serial. Only clean
// runs kill: the scenarios of the others pick their two clients by
// number, and a dead one would act again.
func (g *gen) kill(p string) {
	g.emit(history.Nemesis, history.Info, history.Start, history.Event{Fault: history.KillClient, Targets: []string{p}})
	g.clients = slices.DeleteFunc(slices.Clone(g.clients), func(c string) bool { return c == p })
	delete(g.waiting, p)
	g.now += genTTL + 10e6
	g.emit(history.Nemesis, history.Info, history.Stop, history.Event{Fault: history.KillClient})
}

// nemesis sometimes pauses a client or ends the pause; the checkers ignore
// it, and must.
func (g *gen) nemesis() {
	switch g.src.pick(8) {
	case 1:
		if g.paused == "" {
			g.paused = g.client()
			g.nemesisEvent(history.Start, g.paused)
		}
	case 2:
		g.unpause()
	}
}

func (g *gen) unpause() {
	if g.paused != "" {
		g.nemesisEvent(history.Stop, g.paused)
		g.paused = ""
	}
}

func (g *gen) nemesisEvent(f, target string) {
	g.emit(history.Nemesis, history.Info, f, history.Event{Fault: "pause", Targets: []string{target}})
}

// splitBrain has two clients hold the lock at once, as a broken lock or an
// expired lease allows, and interleaves their reads and writes; the store
// applies its fence rules to whatever reaches it.
func (g *gen) splitBrain() {
	a, b := g.two()
	key := g.keys[g.src.pick(len(g.keys))]
	ta, _ := g.acquire(a, true)
	tb, _ := g.acquire(b, true)
	type holder struct {
		p     string
		tok   int64
		stage int // 0: read next, 1: write next, 2: done
		read  int64
	}
	hs := []*holder{{p: a, tok: ta}, {p: b, tok: tb}}
	for hs[0].stage < 2 || hs[1].stage < 2 {
		h := hs[g.src.pick(2)]
		if h.stage == 2 {
			h = hs[0]
			if h.stage == 2 {
				h = hs[1]
			}
		}
		if h.stage == 0 {
			e, ok := g.request(h.p, "read", key, h.tok, 0, false, nil)
			h.read, h.stage = e.Value, 1
			if !ok {
				h.stage = 2
			}
			continue
		}
		g.request(h.p, "write", key, h.tok, h.read+1, false, nil)
		h.stage = 2
	}
	g.release(a, ta, true)
	g.release(b, tb, false)
}

// staleWrite is the scenario fencing exists for: a holds the lock and reads,
// is paused past its lease, b is granted a newer token and reads (and maybe
// writes), then a resumes and its write, based on what it read before the
// pause, is accepted. Every request gets through, so the store's answers
// are fixed by its fence mode, which newGen chose so the write is accepted.
func (g *gen) staleWrite() {
	g.unpause()
	a, b := g.two()
	ta, _ := g.acquire(a, true)
	ra, _ := g.request(a, "read", "x", ta, 0, true, nil)
	g.nemesisEvent(history.Start, a)
	tb, _ := g.acquire(b, true)
	rb, _ := g.request(b, "read", "x", tb, 0, true, nil)
	// A store fencing writes rejects a's write once b has written.
	bFirst := g.fence == store.FenceNone && g.src.pick(2) == 1
	if bFirst {
		g.request(b, "write", "x", tb, rb.Value+1, true, nil)
	}
	g.nemesisEvent(history.Stop, a)
	where := []int{lostNever, lostAfterCheck, lostDuringWrite, lostAfterWrite}[g.src.pick(4)]
	lost := func(at int) {
		if where == at {
			g.emit(a, history.Info, history.LeaseLost, history.Event{Token: ta})
		}
	}
	lost(lostAfterCheck)
	w, _ := g.request(a, "write", "x", ta, ra.Value+1, true, func() { lost(lostDuringWrite) })
	lost(lostAfterWrite)
	if w.Outcome != store.Accepted || ta >= tb {
		panic(fmt.Sprintf("generator bug: the stale write %+v was not accepted after token %d", w, tb))
	}
	if !bFirst {
		g.request(b, "write", "x", tb, rb.Value+1, true, nil)
	}
	g.release(a, ta, true)
	g.release(b, tb, false)
}

// misrecord has the history say that one of the writes the store logged
// on the judged key wrote another value, as a harness recording the wrong
// value would.
func (g *gen) misrecord() {
	logged := map[string]bool{}
	for _, e := range g.c.in.Store {
		if e.Op == "write" && (g.c.in.Key == "" || e.Key == g.c.in.Key) {
			logged[e.Req] = true
		}
	}
	var writes []int // the logged writes' invocations
	for i, e := range g.c.in.History {
		if e.F == history.Write && e.Type == history.Invoke && logged[e.Req] {
			writes = append(writes, i)
		}
	}
	if len(writes) == 0 {
		return
	}
	w := &g.c.in.History[writes[g.src.pick(len(writes))]]
	w.Value = history.Int(*w.Value + 1 + int64(g.src.pick(3)))
	g.c.misrecorded, g.c.lost = true, nil
}

// misrecordedProgram is prog, a program for a clean run, made to misrecord
// a write: the run's last choice, whether to, is made for it. It follows
// prog's choices, then the plain path's, to find where that choice is.
func misrecordedProgram(prog []byte) []byte {
	padded := append(slices.Clone(prog), make([]byte, 1<<12)...)
	g := newGen(nil, padded)
	g.run()
	last := len(padded) - len(g.src.b) - 1
	return append(padded[:last:last], 7)
}

// mutate damages a run that makes no promises, as bugs in a lock, a store
// or the harness's recording would: the checkers must still not panic and
// must still point only at evidence that exists.
func (g *gen) mutate() {
	for n := g.src.pick(4); n > 0; n-- {
		h, s := g.c.in.History, g.c.in.Store
		kind := g.src.pick(12)
		if (kind < 6 && len(s) == 0) || (kind >= 6 && len(h) == 0) {
			continue
		}
		si, hi := g.src.pick(max(len(s), 1)), g.src.pick(max(len(h), 1))
		delta := int64(g.src.next()) - 128
		switch kind {
		case 0:
			s[si].Outcome = map[string]string{store.Accepted: store.Rejected, store.Rejected: store.Accepted}[s[si].Outcome]
		case 1:
			g.c.in.Store = slices.Delete(s, si, si+1)
		case 2:
			s[si].Value += delta
		case 3:
			s[si].Token += delta
		case 4:
			s[si].Req = s[(si+1)%len(s)].Req
		case 5:
			// Entries out of order, or the same one logged twice.
			j := g.src.pick(len(s))
			if delta > 0 {
				s[si], s[j] = s[j], s[si]
			} else {
				g.c.in.Store = slices.Insert(s, j, s[si])
			}
		case 6:
			if h[hi].Value != nil {
				h[hi].Value = history.Int(*h[hi].Value + delta)
			} else {
				h[hi].Value = history.Int(delta)
			}
		case 7:
			g.c.in.History = slices.Delete(h, hi, hi+1)
		case 8:
			h[hi].Token += delta
		case 9:
			h[hi].Time += delta * 1e6
		case 10:
			h[hi].Type = []history.Type{history.Invoke, history.OK, history.Fail, history.Info}[int(delta+128)%4]
		case 11:
			h[hi].Process = append(slices.Clone(g.clients), history.Nemesis, "c01", "w")[int(delta+128)%(len(g.clients)+3)]
		}
	}
}

// expectLost works out the lost-updates counts from the simulation's
// read-from, by brute force over ancestor sets: small runs, plain code.
func (g *gen) expectLost() map[string]int64 {
	key := cmp.Or(g.c.in.Key, "x")
	typ := map[string]history.Type{} // write req -> its outcome in the history
	open := map[string]string{}      // process -> its open write's req
	for _, e := range g.c.in.History {
		switch {
		case e.F != history.Write:
		case e.Type == history.Invoke && e.Key == key:
			typ[e.Req], open[e.Process] = history.Info, e.Req
		case e.Type != history.Invoke && open[e.Process] != "":
			typ[open[e.Process]] = e.Type
			delete(open, e.Process)
		}
	}
	var writes []store.Entry // accepted, in log order
	var reads []int          // per accepted read, how many accepted writes precede it
	for _, e := range g.c.in.Store {
		switch {
		case e.Key != key || e.Outcome != store.Accepted:
		case e.Op == "write":
			writes = append(writes, e)
		default:
			reads = append(reads, len(writes))
		}
	}
	ancestry := func(req string) map[string]bool {
		out := map[string]bool{}
		for ; req != ""; req = g.parent[req] {
			out[req] = true
		}
		return out
	}
	final := map[string]bool{}
	if len(writes) > 0 {
		final = ancestry(writes[len(writes)-1].Req)
	}
	want := map[string]int64{"missing": 0, "lost_acknowledged": 0, "regressions": 0, "regressions_repaired": 0, "regressed_reads": 0}
	for _, w := range writes {
		if !final[w.Req] {
			want["missing"]++
			if typ[w.Req] == history.OK {
				want["lost_acknowledged"]++
			}
		}
	}
	// A regression that erased an acknowledged write lasts until a write
	// descends from the write it replaced; the reads in between saw it.
	counted := map[int]bool{}
	for j := 1; j < len(writes); j++ {
		if writes[j].Value > writes[j-1].Value {
			continue
		}
		want["regressions"]++
		before, after := ancestry(writes[j-1].Req), ancestry(writes[j].Req)
		acked := false
		for req := range before {
			acked = acked || (!after[req] && typ[req] == history.OK)
		}
		end := len(writes)
		for k := j + 1; k < len(writes); k++ {
			if ancestry(writes[k].Req)[writes[j-1].Req] {
				end = k
				want["regressions_repaired"]++
				break
			}
		}
		for i, n := range reads {
			if acked && n > j && n <= end && !counted[i] {
				counted[i] = true
				want["regressed_reads"]++
			}
		}
	}
	return want
}
