package checkers

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/history"
)

// The kinds of anomaly this checker finds.
var (
	Deadlock = AnomalyKind{Name: "deadlock", About: "clients waited for a lock no one held, no one was granted and no fault kept from them, for several TTLs"}
)

// Progress judges whether the workload did enough before the faults for the
// other verdicts to mean anything: a run whose clients never got going
// before the first fault passes every safety check without having tested
// the lock. It also gives the run's one liveness verdict: a deadlock, where
// clients wait for a lock that no one holds, no one is granted, and no
// fault stands in the way, for StallTTLs × TTL or more, makes it invalid.
type Progress struct {
	// MinSections is how many critical sections must complete (write
	// acknowledged) before the first fault, or in the whole run without one.
	MinSections int64
	// StallTTLs is how many TTLs such a wait must last to be a deadlock: a
	// lease left behind by a dead or frozen holder expires after one TTL,
	// and a grant takes a round trip more.
	StallTTLs int64
}

// Name implements Checker.
func (Progress) Name() string { return "progress" }

// Check implements Checker.
func (c Progress) Check(in Input) Result {
	r := newResult(c.Name())
	firstFault := int64(math.MaxInt64)
	var skipped []string
	for i := range in.History {
		e := &in.History[i]
		if e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Info && e.Time < firstFault {
			firstFault = e.Time
		}
		if e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Fail && strings.HasPrefix(e.Error, "skipped") {
			skipped = append(skipped, e.Fault+" "+e.Error)
		}
	}
	st := c.stall(in)
	unreachable, unlocked := openCosts(in.History)
	var before, total int64
	for i := range in.History {
		e := &in.History[i]
		if e.F == history.Write && e.Type == history.OK && e.Process != history.Nemesis {
			total++
			if e.Time < firstFault {
				before++
			}
		}
	}
	r.Counts["sections"] = total
	r.Counts["sections_before_first_fault"] = before
	where := "in the whole run"
	if firstFault != math.MaxInt64 {
		where = "before the first fault at " + history.Seconds(firstFault)
	}
	r.Summary = fmt.Sprintf("%s completed %s, %d in all", plural(before, "critical section"), where, total)
	if firstFault == math.MaxInt64 {
		r.Summary = plural(total, "critical section") + " completed; no fault was injected"
	}
	if in.Lease.None == "" {
		// Both costs of a lock service that cannot be reached: a client
		// failing closed waits (unreachable acquires, fewer sections), one
		// failing open writes without the lock (unlocked sections, which
		// the data checkers judge).
		r.Counts["acquires_unknown"], r.Counts["sections_unlocked"] = unreachable, unlocked
		r.Counts["unreachable_ns"] = Unreachable(in)
		if unreachable > 0 {
			r.Summary += fmt.Sprintf("; %s got no answer from the lock service (clients could not reach it for %s), %s then ran without the lock",
				plural(unreachable, "acquire"), seconds(r.Counts["unreachable_ns"]), plural(unlocked, "section"))
		}
	}
	// The unavailability after the faults is the one definition that
	// comparisons of runs count too (metrics measures the same samples).
	if faults := FaultUnavailability(in.History); len(faults) > 0 {
		var sum int64
		for _, ns := range faults {
			sum += ns
		}
		r.Counts["unavailable_ns"] = sum
		r.Summary += fmt.Sprintf("; the lock unavailable for %s after %s (clients waiting, none holding, from each fault to the first grant after it recovered)",
			seconds(sum), plural(int64(len(faults)), "fault"))
	}
	if st.judged {
		r.Counts["longest_stall_ns"] = st.longest.to - st.longest.from
		r.Counts["deadlocks"] = 0
		r.Summary += fmt.Sprintf("; longest wait for a free lock with no fault in force %s (a deadlock from %d TTLs)",
			seconds(st.longest.to-st.longest.from), c.StallTTLs)
		if st.longest.to-st.longest.from >= c.StallTTLs*in.Lease.TTL {
			r.add("deadlocks", st.anomaly(in))
			r.Valid = Invalid
			return r
		}
	}
	// A fault that could not act on this service is no pass: if none of
	// the faults asked for could, the run tested nothing it was meant to.
	if len(skipped) > 0 && firstFault == math.MaxInt64 {
		r.Valid = Unknown
		r.Reason = "not meaningful: no fault asked for could be injected (" + strings.Join(skipped, "; ") + ")"
		return r
	}
	if before < c.MinSections {
		r.Valid = Unknown
		r.Reason = fmt.Sprintf("not meaningful: %s completed %s; at least %d are needed", plural(before, "critical section"), where, c.MinSections)
		return r
	}
	r.Valid = Valid
	return r
}

// stall is the longest span in which clients waited for the lock while no
// live client held it, none was granted it and no fault was in force.
type stallResult struct {
	judged  bool
	longest stallSpan
}

type stallSpan struct {
	from, to int64
	// waiters waited throughout; last is the index of the event the span
	// began with (a grant's release, a kill, a heal).
	waiters []string
	last    int64
}

func (c Progress) stall(in Input) stallResult {
	if in.Lease.None != "" || in.Lease.TTL <= 0 || c.StallTTLs <= 0 {
		return stallResult{}
	}
	res := stallResult{judged: true}
	// One state per process, found by one lookup per event, and counts of
	// those waiting and holding kept as they change: a check of every
	// client after each event would cost clients × events.
	type proc struct {
		end                    int // the position of the client's last event
		waiting, holding, dead bool
	}
	procs := map[string]*proc{}
	state := func(name string) *proc {
		p, ok := procs[name]
		if !ok {
			p = &proc{end: -1}
			procs[name] = p
		}
		return p
	}
	for i := range in.History {
		if e := &in.History[i]; isClient(e.Process) {
			state(e.Process).end = i
		}
	}
	healing := healings(in.History)
	unanswered := unansweredAcquires(in)
	var (
		faults           = map[string]int{}
		inForce          int // faults with a count above zero
		waiting, holding int // clients waiting, holding
		// open is the span in progress, if opened; a clean run opens
		// one at every hand-over of the lock, so its waiters' slice is
		// reused, and copied only into a new longest span.
		open   stallSpan
		opened bool
	)
	set := func(p *proc, wait, hold bool) {
		waiting += b2i(wait) - b2i(p.waiting)
		holding += b2i(hold) - b2i(p.holding)
		p.waiting, p.holding = wait, hold
	}
	injecting := map[string]int{} // faults invoked, not yet injected
	injected := injections(in.History)
	struck := func(fault string) {
		if faults[fault]++; faults[fault] == 1 {
			inForce++
		}
	}
	healed := func(fault string) {
		if faults[fault] == 1 {
			inForce--
		}
		faults[fault] = max(0, faults[fault]-1)
	}
	// After each event, a span is open exactly while clients wait, none
	// holds and no fault is in force.
	for i := range in.History {
		e := &in.History[i]
		var p *proc
		switch {
		case e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Invoke:
			// A fault may take effect at any moment of its injection,
			// which can take seconds (a node's kill and its wait): it is
			// in force from its invocation, unless the injection fails.
			if injected[i] {
				injecting[e.Fault]++
				struck(e.Fault)
			}
		case e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Info:
			if injecting[e.Fault] > 0 {
				injecting[e.Fault]--
			} else {
				struck(e.Fault)
			}
			for _, k := range history.Killed(*e) {
				d := state(k)
				set(d, false, false)
				d.dead = true
			}
		case e.Process == history.Nemesis && e.F == history.Stop && e.Type == history.Invoke:
			// A fault whose heal is followed by its healthy event stays
			// in force until then: a node restarted is not yet serving.
			if _, awaits := healing.awaits[i]; !awaits {
				healed(e.Fault)
			}
		case e.Process == history.Nemesis && e.F == history.Healthy:
			// A service that never answered again keeps the fault in
			// force to the end of the run.
			if healing.ends[i] && e.Type == history.Info {
				healed(e.Fault)
			}
		case !isClient(e.Process):
			continue
		default:
			if p = state(e.Process); p.dead {
				continue
			}
			switch {
			case e.F == history.Acquire && e.Type == history.Invoke:
				// An acquire the service never answered is no wait for
				// a free lock: the service was down.
				set(p, !unanswered[int32(i)], p.holding)
			case e.F == history.Acquire && e.Type == history.OK:
				set(p, false, true)
			case e.F == history.Acquire && e.Type == history.Info:
				// Nor is the pause its client takes before it asks again.
				set(p, false, p.holding)
			case e.F == history.Release && e.Type == history.Invoke:
				set(p, p.waiting, false)
			}
			if p.end == i {
				set(p, false, false)
			}
		}
		granted := e.F == history.Acquire && e.Type == history.OK
		stalled := waiting > 0 && holding == 0 && inForce == 0
		if opened && (!stalled || granted) {
			open.to = e.Time
			if open.to-open.from > res.longest.to-res.longest.from {
				res.longest = open
				res.longest.waiters = slices.Clone(open.waiters)
			}
			opened = false
		}
		if stalled && !opened {
			waiters := open.waiters[:0]
			for name, p := range procs {
				if p.waiting {
					waiters = append(waiters, name)
				}
			}
			slices.Sort(waiters)
			open, opened = stallSpan{from: e.Time, waiters: waiters, last: e.Index}, true
		}
	}
	return res
}

// healing pairs each heal with the healthy event that followed it.
type healing struct {
	// awaits holds the positions of the heals' invocations that a healthy
	// event of the same fault follows, before that fault starts again.
	awaits map[int]struct{}
	// ends holds the positions of those healthy events.
	ends map[int]bool
}

// healings finds, in h, each heal that a healthy event followed: a fault
// is in force from its start until its healthy event when it has one, and
// until its heal begins when it has none (a fault that does not act on
// the service, or a history recorded before the event existed).
func healings(h []history.Event) healing {
	out := healing{awaits: map[int]struct{}{}, ends: map[int]bool{}}
	pending := map[string]int{} // a fault's last heal awaiting its healthy event
	for i := range h {
		e := &h[i]
		if e.Process != history.Nemesis {
			continue
		}
		switch {
		case e.F == history.Start:
			delete(pending, e.Fault)
		case e.F == history.Stop && e.Type == history.Invoke:
			pending[e.Fault] = i
		case e.F == history.Healthy:
			if k, ok := pending[e.Fault]; ok {
				out.awaits[k], out.ends[i] = struct{}{}, true
				delete(pending, e.Fault)
			}
		}
	}
	return out
}

// awaitsAfter reports whether the heal whose completion is at position i
// of h awaits a healthy event: its invocation, the last of its fault
// before i, is one of those a healthy event follows.
func (hl healing) awaitsAfter(h []history.Event, i int) (int, bool) {
	for k := i - 1; k >= 0; k-- {
		if e := &h[k]; e.Process == history.Nemesis && e.F == history.Stop && e.Type == history.Invoke && e.Fault == h[i].Fault {
			_, ok := hl.awaits[k]
			return k, ok
		}
	}
	return -1, false
}

// injections holds the positions of the nemesis's start invocations whose
// injection succeeded or may have (a start info of the same fault answers
// them, or nothing did before the history ends; one that failed, or found
// no target, struck nothing).
func injections(h []history.Event) map[int]bool {
	out := map[int]bool{}
	pending := map[string]int{}
	for i := range h {
		e := &h[i]
		if e.Process != history.Nemesis || e.F != history.Start {
			continue
		}
		switch k, ok := pending[e.Fault]; {
		case e.Type == history.Invoke:
			pending[e.Fault] = i
		case ok:
			out[k] = e.Type == history.Info
			delete(pending, e.Fault)
		}
	}
	// An injection the run ended during may have struck.
	for _, k := range pending {
		out[k] = true
	}
	return out
}

// unansweredAcquires holds the positions of the acquire invocations the
// lock service gave no answer to (their completion is info): the service
// was unreachable, down or partitioned away, not holding the lock for
// someone else. An acquire still open when the history ends is not one of
// them: a client blocked on a lock no one releases looks like that.
func unansweredAcquires(in Input) map[int32]bool {
	refs, _ := in.Refs()
	out := map[int32]bool{}
	for _, o := range refs {
		if o.Done && !o.Lone() && in.History[o.Call].F == history.Acquire && in.History[o.Ret].Type == history.Info {
			out[o.Call] = true
		}
	}
	return out
}

// Unreachable is the time, in ns, during which some client could not
// reach the lock service: from the invocation of an acquire the service
// gave no answer to until its client next asked (or its record ended),
// the spans of all clients merged. It is not the unavailability after a
// fault (FaultUnavailability): on etcd and ZooKeeper an acquire during an
// outage fails rather than going unanswered, and a client waiting behind
// a holder the fault silenced reaches the service all along.
func Unreachable(in Input) int64 {
	unanswered := unansweredAcquires(in)
	if len(unanswered) == 0 {
		return 0
	}
	type span struct{ from, to int64 }
	var spans []span
	open := map[string]int64{} // a client's span in progress, by its start
	last := map[string]int64{} // a client's last event
	for i := range in.History {
		e := &in.History[i]
		if !isClient(e.Process) {
			continue
		}
		last[e.Process] = e.Time
		from, ok := open[e.Process]
		if ok && (e.F == history.Acquire && e.Type == history.Invoke) {
			spans = append(spans, span{from, e.Time})
			delete(open, e.Process)
		}
		if unanswered[int32(i)] {
			open[e.Process] = e.Time
		}
	}
	for c, from := range open {
		spans = append(spans, span{from, last[c]})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var total, reach int64
	reach = math.MinInt64
	for _, s := range spans {
		if s.from > reach {
			total += s.to - s.from
		} else if s.to > reach {
			total += s.to - reach
		}
		reach = max(reach, s.to)
	}
	return total
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isClient reports whether process is a client's own (not its lease
// process, not the nemesis).
func isClient(process string) bool {
	if process == history.Nemesis {
		return false
	}
	_, lease := history.LeaseOwner(process)
	return !lease
}

func (s stallResult) anomaly(in Input) Anomaly {
	l := s.longest
	return Anomaly{Kind: Deadlock.Name, Time: l.from, Clients: l.waiters, Events: []int64{l.last},
		Message: fmt.Sprintf("from %s to %s (%s, %.1f × the %s TTL) %s waited for the lock while no live client held it, none was granted it, and no fault was in force: a lock no one will release or let expire",
			history.Seconds(l.from), history.Seconds(l.to), seconds(l.to-l.from), float64(l.to-l.from)/float64(in.Lease.TTL),
			seconds(in.Lease.TTL), strings.Join(l.waiters, ", "))}
}

func seconds(ns int64) string { return fmt.Sprintf("%.1f s", float64(ns)/1e9) }

// openCosts counts the acquires whose outcome was unknown (the lock service
// could not be reached) and the writes a client then made without holding
// the lock (failing open).
func openCosts(h []history.Event) (unreachable, unlocked int64) {
	holds := map[string]bool{}
	for _, e := range h {
		switch {
		case e.F == history.Acquire && e.Type == history.Info:
			unreachable++
			holds[e.Process] = false
		case e.F == history.Acquire && e.Type == history.OK:
			holds[e.Process] = true
		case e.F == history.Release && e.Type == history.Invoke:
			holds[e.Process] = false
		case e.F == history.Write && e.Type == history.Invoke && !holds[e.Process] && e.Token == 0 && isClient(e.Process):
			unlocked++
		}
	}
	return unreachable, unlocked
}

// SectionsCompleted is how many critical sections the run completed, as
// its progress result among rs counted them; ok is false when rs has none.
func SectionsCompleted(rs []Result) (n int64, ok bool) {
	for _, r := range rs {
		if r.Checker == (Progress{}).Name() {
			n, ok = r.Counts["sections"]
			return n, ok
		}
	}
	return 0, false
}

// FaultUnavailability is, for each fault injected, how long the lock was
// unavailable after it, in ns: the time, from the fault's start to the
// first grant once the service had recovered (its healthy event, or its
// heal in a history without one; the end of the history if it never
// did), during which some client wanted the lock (an acquire of its
// outstanding, or failed or unanswered and not yet asked again) and no
// client held it. It is the progress checker's stall without its
// no-fault clause, one sample per fault, in fault order.
func FaultUnavailability(h []history.Event) []int64 {
	type window struct{ from, recovered, to int64 }
	var ws []window
	end := endOfHistory(h)
	healing := healings(h)
	open := map[string][]int{} // a fault's windows awaiting their recovery
	for i := range h {
		e := &h[i]
		if e.Process != history.Nemesis {
			continue
		}
		switch {
		case e.F == history.Start && e.Type == history.Info:
			ws = append(ws, window{from: e.Time, recovered: end, to: end})
			open[e.Fault] = append(open[e.Fault], len(ws)-1)
		case e.F == history.Stop && e.Type == history.Info:
			if _, awaits := healing.awaitsAfter(h, i); !awaits {
				for _, k := range open[e.Fault] {
					ws[k].recovered = e.Time
				}
				delete(open, e.Fault)
			}
		case e.F == history.Healthy:
			for _, k := range open[e.Fault] {
				if e.Type == history.Info {
					ws[k].recovered = e.Time
				}
			}
			delete(open, e.Fault)
		}
	}
	// Each window ends at the first grant at or after its recovery.
	for k := range ws {
		for i := range h {
			if e := &h[i]; e.Time >= ws[k].recovered && e.F == history.Acquire && e.Type == history.OK && isClient(e.Process) {
				ws[k].to = e.Time
				break
			}
		}
	}
	out := make([]int64, len(ws))
	wanting, holding := map[string]bool{}, map[string]bool{}
	dead := map[string]bool{}
	last := int64(-1)
	for i := range h {
		e := &h[i]
		if last >= 0 && len(holding) == 0 && len(wanting) > 0 {
			for k, w := range ws {
				out[k] += max(0, min(e.Time, w.to)-max(last, w.from))
			}
		}
		last = e.Time
		for _, c := range history.Killed(*e) {
			dead[c] = true
			delete(wanting, c)
			delete(holding, c)
		}
		if !isClient(e.Process) || dead[e.Process] {
			continue
		}
		switch {
		case e.F == history.Acquire && e.Type == history.Invoke:
			wanting[e.Process] = true
		case e.F == history.Acquire && e.Type == history.OK:
			delete(wanting, e.Process)
			holding[e.Process] = true
		case e.F == history.Release && e.Type == history.Invoke:
			delete(holding, e.Process)
		}
	}
	return out
}
