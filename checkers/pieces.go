package checkers

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkSections decides whether the sections linearize under CounterModel,
// with the verdict porcupine.CheckOperationsTimeout(CounterModel(),
// Operations(ss), timeout) gives, and explains an illegal history.
//
// Porcupine on a whole run is quadratic at best: each step of its search
// hashes and copies a bitset with a bit per section, and its cache keeps
// every copy, so 10⁵ sections take gigabytes. But a lock serializes the
// sections, and porcupine's search cannot reorder anything across a point
// in time that no section spans (in its terms, a point with every earlier
// return before every later call): it must linearize all sections before
// the point ahead of any after it. So checkSections cuts the run into
// pieces at such points and takes them in turn, each from every value the
// counter can hold after the pieces before it, which are exactly the values
// that some order of those pieces ends in: the history linearizes if and
// only if the last piece leaves some value. A piece of a lock history is
// one section, a few around an unknown write, or a stale holder's section
// with all those it spans; small pieces are enumerated outright
// (enumerate), and larger ones go to porcupine.
//
// A section whose write has an unknown outcome returns at the end of the
// history, since the write may land at any time, so it spans every later
// point. Such sections are cut off at a point all the same (cut) when no
// section called after the point can leave the counter at a value one of
// them read. Take any order that linearizes the history, and in it the
// first of the sections cut off, U, that comes after some section called
// after the point. The section just before U comes after that one too, so
// it is neither a section that returned before the point nor another of
// those cut off: it was called after the point, and it must leave the
// counter at the value U read, which none can. So every such order already
// puts the sections cut off before all those called after the point, and
// ending their spans there only rules out orders that do not linearize the
// history anyway.
//
// The timeout bounds the whole check: if it runs out, the verdict is
// Unknown, as porcupine's is.
func checkSections(ss []Section, timeout time.Duration, guard *memoryGuard, name valueNamer) (porcupine.CheckResult, Anomaly) {
	l := &linearizer{ss: ss, guard: guard, name: name}
	if timeout > 0 {
		l.deadline = time.Now().Add(timeout)
	}
	order, bounds := l.cut()
	// The values the counter may hold before the piece, and a buffer for
	// those after it.
	state, next := []int64{0}, []int64{}
	last := -1 // a section an order of the pieces so far can end with
	for p := range len(bounds) - 1 {
		if p%1024 == 0 && l.expired() {
			return porcupine.Unknown, Anomaly{}
		}
		idx := order[bounds[p]:bounds[p+1]]
		values, end, ok := l.enumerate(idx, state, next[:0])
		if !ok {
			// Too large to enumerate. Porcupine checks the piece from all
			// the values at once, which settles an illegal piece, the
			// usual case: a lock history only has large pieces where a
			// stale holder overlapped other holders.
			res, info := l.porcupine(idx, state)
			switch {
			case res == porcupine.Illegal:
				return res, l.explain(order[:bounds[p]], idx, info, state, last)
			case res == porcupine.Unknown:
				return res, Anomaly{}
			case slices.ContainsFunc(idx, func(i int) bool { return ss[i].Outcome == WriteUnknown }):
				// Porcupine cannot tell the values an unknown write leaves
				// (it stops at the first order that fits, and others may
				// end elsewhere): the rest of the history goes to
				// porcupine whole.
				rest := slices.Sorted(slices.Values(order[bounds[p]:]))
				if res, info = l.porcupine(rest, state); res != porcupine.Illegal {
					return res, Anomaly{}
				}
				return res, l.explain(order[:bounds[p]], rest, info, state, last)
			case len(state) == 1:
				values, end = l.ending(idx, info, state[0], next[:0])
			default:
				if values, end, res = l.eachValue(idx, state, next[:0]); res == porcupine.Unknown {
					return res, Anomaly{}
				}
			}
		}
		if len(values) == 0 {
			res, info := l.porcupine(idx, state)
			if res != porcupine.Illegal {
				return res, Anomaly{}
			}
			return res, l.explain(order[:bounds[p]], idx, info, state, last)
		}
		state, next = values, state
		last = end
	}
	return porcupine.Ok, Anomaly{}
}

// linearizer holds what checkSections works on.
type linearizer struct {
	ss []Section
	// ret is porcupine's return time for each section: its Return, or for
	// an unknown write cut off at a point, that point.
	ret      []int64
	deadline time.Time // zero for none
	guard    *memoryGuard
	name     valueNamer // for the explanation
}

func (l *linearizer) expired() bool {
	return l.guard.exceeded() || (!l.deadline.IsZero() && !time.Now().Before(l.deadline))
}

// cut orders the sections by their first entry in porcupine's timeline and
// splits that order into pieces at every point no section spans, or only
// unknown writes that can be cut off there. It returns the order, each
// piece sorted by section, and the offsets where pieces start, ending with
// len(order).
func (l *linearizer) cut() (order, bounds []int) {
	ss := l.ss
	l.ret = make([]int64, len(ss))
	order = make([]int, len(ss))
	for i := range ss {
		l.ret[i], order[i] = ss[i].Return, i
	}
	first := func(i int) int64 { return min(ss[i].Call, ss[i].Return) }
	byFirst := func(a, b int) int { return cmp.Or(cmp.Compare(first(a), first(b)), cmp.Compare(a, b)) }
	// Sections come in the order of their reads, nearly always the order
	// of their calls.
	if !slices.IsSortedFunc(order, byFirst) {
		slices.SortFunc(order, byFirst)
	}

	// lastLeft, for each value an unknown write read, is the last place in
	// the order of a section that can leave the counter at that value.
	var lastLeft map[int64]int
	for i := range ss {
		if ss[i].Outcome == WriteUnknown {
			if lastLeft == nil {
				lastLeft = map[int64]int{}
			}
			lastLeft[ss[i].Read] = -1
		}
	}
	if lastLeft != nil {
		for k, i := range order {
			vs, n := leaves(&ss[i])
			for _, v := range vs[:n] {
				if _, ok := lastLeft[v]; ok {
					lastLeft[v] = k
				}
			}
		}
	}

	bounds = []int{0}
	reach := int64(math.MinInt64) // the latest entry of the piece, unknown writes' returns aside
	var pending []int             // the piece's unknown writes
	start := 0
	for k, i := range order {
		if k > start && reach < first(i) && !slices.ContainsFunc(pending, func(u int) bool { return lastLeft[ss[u].Read] >= k }) {
			for _, u := range pending {
				l.ret[u] = reach
			}
			slices.Sort(order[start:k])
			bounds = append(bounds, k)
			start, pending = k, pending[:0]
		}
		if s := &ss[i]; s.Outcome == WriteUnknown {
			pending = append(pending, i)
			reach = max(reach, s.Call)
		} else {
			reach = max(reach, s.Call, s.Return)
		}
	}
	if len(order) == 0 {
		return order, bounds
	}
	slices.Sort(order[start:])
	return order, append(bounds, len(order))
}

// leaves returns the values s can leave the counter at.
func leaves(s *Section) ([2]int64, int) {
	switch s.Outcome {
	case WriteAccepted:
		return [2]int64{s.Write}, 1
	case WriteUnknown:
		if s.Write == s.Read {
			return [2]int64{s.Read}, 1
		}
		return [2]int64{s.Read, s.Write}, 2
	default:
		return [2]int64{s.Read}, 1
	}
}

// step appends to dst the values the counter may hold after s from any of
// the values from, sorted.
func step(dst, from []int64, s *Section) []int64 {
	for _, v := range from {
		next, n := successors(v, s)
		dst = append(dst, next[:n]...)
	}
	slices.Sort(dst)
	return slices.Compact(dst)
}

// maxEnumeration bounds the steps enumerate takes on one piece before it
// leaves the piece to porcupine.
const maxEnumeration = 1 << 16

// enumerate appends to dst the values the counter can hold after the
// sections idx, in any order porcupine allows, from any of the values from,
// sorted; and it names a section that such an order can end with. ok is
// false if the piece is too large to enumerate.
func (l *linearizer) enumerate(idx []int, from, dst []int64) (values []int64, last int, ok bool) {
	if len(idx) == 1 {
		i := idx[0]
		s := &l.ss[i]
		// Porcupine meets the return of a section that returns before it
		// is called first, and can never place it.
		if l.ret[i] < s.Call {
			return dst, i, true
		}
		return step(dst, from, s), i, true
	}
	if len(idx) > 64 {
		return dst, -1, false
	}
	// must[a] holds the sections that returned before a was called, which
	// porcupine places before it.
	must := make([]uint64, len(idx))
	for a, i := range idx {
		for b, j := range idx {
			if l.ret[j] < l.ss[i].Call {
				must[a] |= 1 << b
			}
		}
	}
	type config struct {
		placed uint64
		value  int64
	}
	level := make([]config, len(from))
	for k, v := range from {
		level[k] = config{0, v}
	}
	var lastOf []int // the section that made each config of level
	steps := 0
	for range idx {
		var next []config
		var nextLast []int
		seen := make(map[config]bool, 2*len(level))
		for _, c := range level {
			for a, i := range idx {
				if c.placed&(1<<a) != 0 || must[a]&^c.placed != 0 {
					continue
				}
				if steps++; steps > maxEnumeration {
					return dst, -1, false
				}
				vs, n := successors(c.value, &l.ss[i])
				for _, v := range vs[:n] {
					nc := config{c.placed | 1<<a, v}
					if !seen[nc] {
						seen[nc] = true
						next, nextLast = append(next, nc), append(nextLast, i)
					}
				}
			}
		}
		if len(next) == 0 {
			return dst, -1, true
		}
		level, lastOf = next, nextLast
	}
	for _, c := range level {
		dst = append(dst, c.value)
	}
	slices.Sort(dst)
	return slices.Compact(dst), lastOf[0], true
}

// eachValue has porcupine check a piece without unknown writes from each
// of the values from in turn, appending to dst the values it ends in (see
// ending).
func (l *linearizer) eachValue(idx []int, from, dst []int64) (values []int64, last int, res porcupine.CheckResult) {
	last = -1
	for _, v := range from {
		res, info := l.porcupine(idx, []int64{v})
		switch res {
		case porcupine.Unknown:
			return dst, -1, res
		case porcupine.Ok:
			dst, last = l.ending(idx, info, v, dst)
		}
	}
	slices.Sort(dst)
	return slices.Compact(dst), last, porcupine.Ok
}

// ending appends to dst the value a piece without unknown writes ends in
// from v, which porcupine found linearizable from v alone, and returns the
// last section of the order it found. Every order of such a piece from v
// ends in the same value: each section moves the counter from the value it
// read to the value it left, so an order is a path through the values
// using each move once, and where such a path ends is fixed by the moves
// and where it starts. So the order porcupine found tells the value.
func (l *linearizer) ending(idx []int, info porcupine.LinearizationInfo, v int64, dst []int64) ([]int64, int) {
	order := info.PartialLinearizations()[0][0]
	for _, k := range order {
		if s := &l.ss[idx[k]]; s.Outcome == WriteAccepted {
			v = s.Write
		}
	}
	return append(dst, v), idx[order[len(order)-1]]
}

// porcupine checks the sections idx (in ascending order) from the values
// init, in the time left; the ids in the info index idx.
func (l *linearizer) porcupine(idx []int, init []int64) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	var timeout time.Duration
	if !l.deadline.IsZero() {
		if timeout = time.Until(l.deadline); timeout <= 0 {
			return porcupine.Unknown, porcupine.LinearizationInfo{}
		}
	}
	ops := make([]porcupine.Operation, len(idx))
	for k, i := range idx {
		s := l.ss[i]
		ops[k] = porcupine.Operation{ClientId: s.ClientID, Input: s, Call: s.Call, Return: l.ret[i]}
	}
	res, info := porcupine.CheckOperationsVerbose(counterModel(init, l.guard), ops, timeout)
	if l.guard.exceeded() {
		// The search was starved, so its answer means nothing.
		return porcupine.Unknown, porcupine.LinearizationInfo{}
	}
	return res, info
}

// explain describes an illegal piece idx, which porcupine checked from the
// values from, after the sections before it, which an order can end with
// last: the longest partial order of the piece extends an order of those.
func (l *linearizer) explain(before, idx []int, info porcupine.LinearizationInfo, from []int64, last int) Anomaly {
	var longest []int
	if parts := info.PartialLinearizations(); len(parts) > 0 {
		for _, p := range parts[0] {
			// Ties break on the ids so the report does not depend on map
			// order; idx is ascending, so they order the sections alike.
			if len(p) > len(longest) || (len(p) == len(longest) && slices.Compare(p, longest) < 0) {
				longest = p
			}
		}
	}
	placed := make([]bool, len(l.ss))
	for _, i := range before {
		placed[i] = true
	}
	state := from
	for _, k := range longest {
		i := idx[k]
		placed[i], last = true, i
		state = step(nil, state, &l.ss[i])
	}
	return explainIllegal(l.ss, l.ret, placed, last, state, l.name)
}
