package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/history"
)

// The kinds of anomaly this checker finds.
var (
	TwoHoldersKind = AnomalyKind{Name: TwoHolders.Name, About: "two clients held the lock while both leases were certainly valid"}
)

// Lease says how the lock's leases behave, which the exclusion checker needs
// to turn recorded times into proven lease lifetimes. Each lock service
// supplies its own (see backends): the checker knows none by name.
type Lease struct {
	// None says why the lock's holdings have no lease to check (a client
	// that takes no lock), or "" when they have one.
	None string `json:"none,omitempty"`
	// TTL is the configured time to live, in ns; a grant or renewal that
	// records its own TTL uses that instead.
	TTL int64 `json:"ttl"`
	// Slack is how much earlier than send + ttl the service may expire a
	// lease granted or renewed by a request sent at send: SlackFixed +
	// ttl × SlackPPM / 10⁶ ns. The service set the expiry after receiving
	// the request, so the lease lasted at least until send + ttl − slack;
	// the slack is what the service's own clock (whole milliseconds, a
	// slewed wall clock) or its own rule (Redlock's drift factor) can take
	// away. A clock that jumps breaks the bound, and the checker then
	// rightly reports the overlap the jump caused.
	SlackFixed int64 `json:"slack_fixed,omitempty"`
	SlackPPM   int64 `json:"slack_ppm,omitempty"`
	// Session is set when the lease belongs to a session the client keeps
	// alive on its own (etcd): keep-alives the client cannot observe may
	// extend it, so the newest request it saw bounds the expiry only from
	// below, and its acquire records the session lease's grant rather than
	// the lock request.
	Session bool `json:"session,omitempty"`
	// LastStatement is set for a lock with no TTL at all (a PostgreSQL
	// advisory lock), held as long as a server-side session the server
	// may end at any time without the holder knowing: a holding is
	// certain only up to the send of the last statement that succeeded
	// on its session. Its acquire and each renewal record such a
	// statement; their TTLs are ignored and nothing bounds the expiry
	// from above.
	LastStatement bool `json:"last_statement,omitempty"`
	// LossReleases is set for a client that gives the lock up the moment
	// it learns its lease is lost (ZooKeeper's, which then closes its
	// session: the ensemble deletes its znode at once): its lease-lost
	// event ends its certain holding, as a release would. What it goes
	// on believing after is a stale belief.
	LossReleases bool `json:"loss_releases,omitempty"`
}

func (l Lease) slack(ttl int64) int64 { return l.SlackFixed + ttl*l.SlackPPM/1_000_000 }

// noLease says why the holdings have no lease to check, or "" when they
// have one.
func (l Lease) noLease() string {
	switch {
	case l.None != "":
		return l.None
	case l.TTL <= 0:
		return "the lease's TTL is not known"
	}
	return ""
}

// observedExpiry reports whether the client sees every request that can
// extend its lease, so that the newest of them also bounds the expiry from
// above.
func (l Lease) observedExpiry() bool { return !l.Session && !l.LastStatement }

// Exclusion checks the lock's promise itself: no two clients hold it while
// both their leases are certainly valid. A holding H is certain over
// [c_H, L_H): c_H is the completion of the acquire that succeeded, L_H the
// earlier of H's release invocation and the proven lower bound on its
// lease's expiry (Lease). Two holdings of different clients violate
// exclusion iff max(c_A, c_B) < min(L_A, L_B). Only the completion counts
// as the start: a client frozen before it read its grant completes late,
// and its window is then empty, not inside a later holder's.
//
// A holder that goes on believing it holds past L_H (a frozen client, a slow
// network) is a stale belief: the lock did what it promised, and whether
// the data survived is for the fence and data checkers. Stale beliefs are
// reported as windows, with the writes attempted inside them, and each
// fault is credited with the windows it opened.
type Exclusion struct{}

// Name implements Checker.
func (Exclusion) Name() string { return "exclusion" }

// Window is a period a checker draws attention to: two certain holders at
// once (a violation), or a holder believing it holds past its lease.
type Window struct {
	Kind    string   `json:"kind"` // a WindowKind's name
	From    int64    `json:"from"`
	To      int64    `json:"to"`
	Clients []string `json:"clients"`
	Tokens  []int64  `json:"tokens,omitempty"`
	Events  []int64  `json:"events,omitempty"`
	// ExpiredBy is, for a stale belief, the latest the lease can have
	// lasted (0 when not observable); From is the earliest.
	ExpiredBy int64 `json:"expired_by,omitempty"`
	// Writes are the writes the stale holder attempted inside the window.
	Writes int64 `json:"writes,omitempty"`
	// Fault is the history index of the nemesis start the window is
	// credited to, or -1.
	Fault   int64  `json:"fault"`
	Message string `json:"message"`
}

// FaultEffect is what one injected fault did to the holders.
type FaultEffect struct {
	Event int64  `json:"event"` // the history index of its start
	Fault string `json:"fault"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	// Healthy is the service's recovery time: ns from the heal (End) to
	// the nemesis's healthy event after it, 0 when none was recorded.
	// Unhealthy is the reason when the service did not answer again
	// within the bound; the fault is then in force to the end.
	Healthy   int64    `json:"healthy,omitempty"`
	Unhealthy string   `json:"unhealthy,omitempty"`
	Targets   []string `json:"targets,omitempty"`
	// HitHolder: it targeted a client holding the lock when it started,
	// or some window below is credited to it.
	HitHolder bool `json:"hit_holder"`
	// HeldThrough, for a lock with no TTL (Lease.LastStatement): a
	// client it froze held the lock (or was granted it while frozen) and
	// no other client was granted it from HeldFrom until the fault's heal
	// began: the lock was unavailable to everyone else, which is what such
	// a lock promises under a pause and the fault's whole effect. HeldFrom
	// is the fault's start, or later when the pause landed just after its
	// target released and the target, already waiting again, was granted
	// the lock while frozen (see heldThrough).
	HeldThrough bool  `json:"held_through,omitempty"`
	HeldFrom    int64 `json:"held_from,omitempty"`
	// KilledHolder: it killed a client holding the lock, which then
	// had to be let expire.
	KilledHolder bool  `json:"killed_holder,omitempty"`
	StaleWindows int64 `json:"stale_windows"`
	StaleWrites  int64 `json:"stale_writes"`
	TwoHolders   int64 `json:"two_holders"`
}

// holding is one acquire ok of one client, up to its release.
type holding struct {
	client string
	token  int64
	// s is the latest recorded moment certainly before the grant: the
	// acquire's invocation, or, where the lease is granted per acquire,
	// the send of the attempt that took the lock, if later.
	s          int64
	c          int64 // the acquire's completion
	okIdx      int64
	believed   int64 // release invocation, the client's kill, or the end of the history
	released   bool
	killed     bool  // its client was killed while it held the lock
	gaveUp     int64 // when its client gave the lock up on learning it lost (Lease.LossReleases); 0 if it did not
	gaveUpIdx  int64
	releaseIdx int64
	lower      int64 // L_H's lease part: the proven lower bound on expiry, or c when unproven
	lowerIdx   int64 // the event proving it
	upper      int64 // the latest the lease can have lasted; 0 when unknown
	proven     bool
	// byInvocation: its lease is proven from its acquire's invocation,
	// the acquire having recorded no attempt.
	byInvocation bool
	// firstWrite and lastWrite chain its writes through holdings.writes;
	// -1 when it has none.
	firstWrite, lastWrite int32
}

// write is a write a holder invoked, chained to the holder's next one.
type write struct {
	t, idx int64
	next   int32
}

// holdings are a run's holdings, kept by value (a long run has hundreds of
// thousands), with their writes and the order of their c.
type holdings struct {
	all    []holding
	writes []write
	byC    []int32 // indexes into all, by c
}

// end is L_H.
func (h *holding) end() int64 {
	l := h.lower
	if h.released {
		l = min(l, h.believed)
	}
	if h.gaveUp > 0 {
		l = min(l, h.gaveUp)
	}
	return l
}

// endIdx is the event that sets L_H: the release, the client's giving up,
// or the lease's proof.
func (h *holding) endIdx() int64 {
	switch l := h.end(); {
	case h.gaveUp > 0 && l == h.gaveUp && h.gaveUp < h.lower:
		return h.gaveUpIdx
	case h.released && l == h.believed && h.believed < h.lower:
		return h.releaseIdx
	}
	return h.lowerIdx
}

// who names a holder, with its token when the lock issues them.
func (h *holding) who() string {
	if h.token == 0 {
		return h.client
	}
	return fmt.Sprintf("%s (token %d)", h.client, h.token)
}

// Check implements Checker.
func (c Exclusion) Check(in Input) Result {
	r := newResult(c.Name())
	zero(r.Counts, "holdings", "proven", "bounded_by_invocation", "two_holders", "stale_beliefs", "stale_writes", "faults", "faults_effective")
	if why := in.Lease.noLease(); why != "" {
		r.Valid, r.Reason = Skipped, why
		r.Summary = "skipped: no lease to check"
		return r
	}
	h := in.History
	end := endOfHistory(h)
	hs := gather(in, end)
	r.Counts["holdings"] = int64(len(hs.all))
	for _, x := range hs.all {
		if x.proven {
			r.Counts["proven"]++
		}
		if x.byInvocation {
			r.Counts["bounded_by_invocation"]++
		}
	}
	faults := faultsOf(h, end)
	credit := func(t int64) int {
		// The latest fault started by t whose effects may last until t:
		// a lease outlives the fault that froze its holder by up to a TTL.
		best := -1
		for i, f := range faults {
			if f.Start <= t && t <= f.inForceUntil(end)+in.Lease.TTL && (best < 0 || f.Start >= faults[best].Start) {
				best = i
			}
		}
		return best
	}
	record := func(w Window) {
		if i := credit(w.From); i >= 0 {
			w.Fault = faults[i].Event
			if w.KindOf().Violation {
				faults[i].TwoHolders++
			} else {
				faults[i].StaleWindows++
				faults[i].StaleWrites += w.Writes
			}
		}
		if len(r.Windows) < maxAnomalies {
			r.Windows = append(r.Windows, w)
		}
	}
	overlaps(&r, hs, record)
	staleBeliefs(&r, hs, in.Lease.LastStatement, record)
	hitHolders(hs, faults)
	if in.Lease.LastStatement {
		zero(r.Counts, "faults_held_through")
		heldThrough(hs, faults, h)
	}
	r.Faults = faults
	r.Counts["faults"] = int64(len(faults))
	for _, f := range faults {
		if f.StaleWindows+f.TwoHolders > 0 || f.KilledHolder {
			r.Counts["faults_effective"]++
		}
		if f.HeldThrough {
			r.Counts["faults_held_through"]++
		}
	}
	if r.Counts["two_holders"] > 0 {
		r.Valid = Invalid
		r.Summary = fmt.Sprintf("%s of different clients overlapped while both leases were certainly valid; %s",
			plural(r.Counts["two_holders"], "pair")+" of holdings", staleSummary(r.Counts))
		return r
	}
	if r.Counts["holdings"] > 0 && r.Counts["proven"] == 0 {
		r.Valid = Unknown
		r.Reason = "no acquire recorded when its granting request was sent, so no lease is proven to have lasted at all"
		r.Summary = fmt.Sprintf("%s, none with a proven lease", plural(r.Counts["holdings"], "holding"))
		return r
	}
	r.Valid = Valid
	r.Summary = fmt.Sprintf("no two certain holdings overlap (%d of %s proven%s); %s",
		r.Counts["proven"], plural(r.Counts["holdings"], "holding"), byInvocation(r.Counts), staleSummary(r.Counts))
	return r
}

// byInvocation tells how many holdings' leases only their invocations
// bound, if any.
func byInvocation(counts map[string]int64) string {
	if n := counts["bounded_by_invocation"]; n > 0 {
		return fmt.Sprintf(", %d bounded from their invocation", n)
	}
	return ""
}

func staleSummary(counts map[string]int64) string {
	return fmt.Sprintf("%s (holders past their lease), %s inside them; %d of %s opened a window",
		plural(counts["stale_beliefs"], "stale belief"), plural(counts["stale_writes"], "write"),
		counts["faults_effective"], plural(counts["faults"], "fault"))
}

// gather collects every acquire that succeeded, with the proof of its
// lease: the granting attempt's send time and every renewal acknowledged
// while the client held it.
func gather(in Input, end int64) holdings {
	l, h := in.Lease, in.History
	refs, _ := in.Refs()
	hs := holdings{all: make([]holding, 0, calls(h, refs, history.Acquire)), writes: make([]write, 0, calls(h, refs, history.Write))}
	open := map[string]int{}
	// A renewal is credited to the holding its client last had when it
	// was invoked (a redis or Redlock lease renews only while held; an
	// etcd session's keep-alives between holdings prove nothing a later
	// acquire does not carry itself). A renewal still in flight when the
	// release is sent may extend the lease past the release.
	renewing := map[string]int{}
	prove := func(x *holding, sent, ttl, idx int64) {
		if ttl <= 0 {
			ttl = l.TTL
		}
		b := sent + ttl - l.slack(ttl)
		if l.LastStatement {
			b = sent
		}
		if !x.proven || b > x.lower {
			x.lower, x.lowerIdx, x.proven = b, idx, true
		}
	}
	extend := func(x *holding, done, ttl int64) {
		if ttl <= 0 {
			ttl = l.TTL
		}
		x.upper = max(x.upper, done+ttl+l.slack(ttl))
	}
	for _, o := range refs {
		call, ret := &h[o.Call], &h[o.Ret]
		if owner, ok := history.LeaseOwner(call.Process); ok {
			i, held := renewing[owner]
			if call.F != history.Renew || !held || call.Type != history.Invoke {
				continue
			}
			x := &hs.all[i]
			switch {
			case x.released && call.Time >= x.believed:
				// Sent after the release: it may belong to a session
				// that replaced the holding's lost one (ZooKeeper's),
				// so it proves nothing about the holding's lease; it
				// can only have extended it.
				if o.Done && ret.Type != history.Fail {
					extend(x, ret.Time, ret.TTL)
				}
			case !o.Done:
				// Sent, never answered: it may have taken effect as
				// late as the history goes.
				extend(x, end, 0)
			case ret.Type == history.OK:
				prove(x, call.Time, ret.TTL, ret.Index)
				extend(x, ret.Time, ret.TTL)
			case ret.Type == history.Info:
				extend(x, ret.Time, 0)
			}
			continue
		}
		if o.Lone() && call.F == history.LeaseLost && l.LossReleases {
			if i, ok := open[call.Process]; ok && hs.all[i].gaveUp == 0 {
				hs.all[i].gaveUp, hs.all[i].gaveUpIdx = call.Time, call.Index
			}
			continue
		}
		if call.Process == history.Nemesis || o.Lone() {
			continue
		}
		switch call.F {
		case history.Acquire:
			if o.Type(h) != history.OK {
				continue
			}
			hs.all = append(hs.all, holding{client: call.Process, token: ret.Token, s: call.Time, c: ret.Time, okIdx: ret.Index,
				believed: end, lower: ret.Time, firstWrite: -1, lastWrite: -1})
			x := &hs.all[len(hs.all)-1]
			// The grant happened before its completion.
			extend(x, ret.Time, ret.TTL)
			switch {
			case ret.Attempt > 0:
				prove(x, ret.Attempt, ret.TTL, ret.Index)
				if !l.Session {
					x.s = max(x.s, ret.Attempt)
				}
			case l.observedExpiry():
				// A lease granted by the acquire's own request (not a
				// session's, not a server session's last statement) was
				// granted by a request sent no earlier than the acquire
				// was invoked: the invocation bounds its send.
				prove(x, call.Time, ret.TTL, call.Index)
				x.byInvocation = true
			}
			open[call.Process], renewing[call.Process] = len(hs.all)-1, len(hs.all)-1
		case history.Release:
			if i, ok := open[call.Process]; ok {
				x := &hs.all[i]
				x.believed, x.released, x.releaseIdx = call.Time, true, call.Index
				delete(open, call.Process)
			}
		case history.Write:
			if i, ok := open[call.Process]; ok {
				x, w := &hs.all[i], int32(len(hs.writes))
				hs.writes = append(hs.writes, write{t: call.Time, idx: call.Index, next: -1})
				if x.lastWrite >= 0 {
					hs.writes[x.lastWrite].next = w
				} else {
					x.firstWrite = w
				}
				x.lastWrite = w
			}
		}
	}
	if !l.observedExpiry() {
		for i := range hs.all {
			hs.all[i].upper = 0
		}
	}
	// A client killed while it held the lock believes nothing after its
	// kill; its lease is unchanged: nothing released it.
	for _, k := range kills(h) {
		for i := range hs.all {
			if x := &hs.all[i]; x.client == k.client && !x.released && x.c <= k.time && k.time < x.believed {
				x.believed, x.killed = k.time, true
			}
		}
	}
	hs.byC = make([]int32, len(hs.all))
	for i := range hs.byC {
		hs.byC[i] = int32(i)
	}
	// Acquires complete nearly in history order: sort only if they do not.
	byC := func(a, b int32) int { return cmp.Or(cmp.Compare(hs.all[a].c, hs.all[b].c), cmp.Compare(a, b)) }
	if !slices.IsSortedFunc(hs.byC, byC) {
		slices.SortFunc(hs.byC, byC)
	}
	return hs
}

// overlaps finds every pair of holdings of different clients that the
// service granted while the other's lease was certainly valid. Each grant
// happened within [s_X, c_X]; two holdings are two holders iff, for every
// order of their grants those intervals allow, the later grant completed
// before the earlier holding's L. For holdings A and B with c_A ≤ c_B,
// A's grant may always have come first, which needs c_B < L_A (and A's
// lease proven); B's may have come first iff s_B ≤ c_A, which then needs
// c_A < L_B (and B's lease proven). So B is a second holder beside an
// earlier A iff c_B < L_A and c_A < t_B, where t_B is the later of s_B
// and, if B's lease is proven, L_B. When B's own window [c_B, L_B) is not
// empty, t_B > c_B ≥ c_A and this is max(c_A, c_B) < min(L_A, L_B); when
// it is empty (B's reply came late), B's grant still fell inside A's
// certain lease if B asked only after A's grant completed.
//
// Sweeping holdings in order of c, the A to compare B with are a prefix of
// that order (those with c_A < t_B), and the witness is the one with the
// latest L among them, of a client other than B's: the latest L of each
// prefix, among two different clients, is kept as the sweep goes.
func overlaps(r *Result, hs holdings, record func(Window)) {
	// best[j] and second[j] are the latest L among the proven holdings
	// of the first j in order of c, of two different clients; -1 for none.
	n := len(hs.byC)
	best, second := make([]int32, n+1), make([]int32, n+1)
	best[0], second[0] = -1, -1
	for j, k := range hs.byC {
		b, s := best[j], second[j]
		if x := &hs.all[k]; x.proven {
			switch {
			case b < 0 || x.end() > hs.all[b].end():
				if b >= 0 && hs.all[b].client != x.client {
					s = b
				}
				b = k
			case x.client != hs.all[b].client && (s < 0 || x.end() > hs.all[s].end()):
				s = k
			}
		}
		best[j+1], second[j+1] = b, s
	}
	for j, k := range hs.byC {
		b := &hs.all[k]
		t := b.s
		if b.proven {
			t = max(t, b.end())
		}
		// The first of those before B with c ≥ t ends the prefix.
		p, _ := slices.BinarySearchFunc(hs.byC[:j], t, func(a int32, t int64) int { return cmp.Compare(hs.all[a].c, t) })
		w := best[p]
		if w >= 0 && hs.all[w].client == b.client {
			w = second[p]
		}
		if w < 0 || b.c >= hs.all[w].end() || !r.tally("two_holders") {
			continue
		}
		a := &hs.all[w]
		var msg string
		from, to := b.c, min(a.end(), b.end())
		if b.proven && b.c < b.end() {
			msg = fmt.Sprintf("%s was granted the lock at %s while the lease of %s, granted at %s, was certainly valid until %s: "+
				"both held it from %s to %s (%s).",
				b.who(), history.Seconds(b.c), a.who(), history.Seconds(a.c), history.Seconds(a.end()),
				history.Seconds(b.c), history.Seconds(to), millis(to-b.c))
		} else {
			// B's grant came at some moment of [s_B, c_B]; whichever grant
			// came second, both held the lock at that moment, which lies
			// between the later of the asks and B's reply.
			from, to = max(a.s, b.s), b.c
			msg = fmt.Sprintf("%s asked for the lock at %s and was granted it by %s, while the lease of %s, granted at %s, was certainly valid until %s: "+
				"the service granted the lock twice, and both held it at some moment from %s to %s; %s's reply came late, so its own lease is not proven past it.",
				b.who(), history.Seconds(b.s), history.Seconds(b.c), a.who(), history.Seconds(a.c), history.Seconds(a.end()),
				history.Seconds(from), history.Seconds(to), b.client)
		}
		events := []int64{a.okIdx, a.endIdx(), b.okIdx}
		slices.Sort(events)
		events = slices.Compact(events)
		r.Anomalies = append(r.Anomalies, Anomaly{Kind: TwoHoldersKind.Name, Message: msg, Events: events,
			Clients: []string{a.client, b.client}, Tokens: []int64{a.token, b.token}, Time: b.c})
		record(Window{Kind: TwoHolders.Name, From: from, To: to, Clients: []string{a.client, b.client},
			Tokens: []int64{a.token, b.token}, Events: events, Fault: -1, Message: msg})
	}
}

// staleBeliefs reports each holder that went on believing it held the lock
// past L_H, with the writes it attempted inside that window and the first
// grant to another client after its lease ended.
//
// Under a lock with no TTL (lastStatement) L_H is only the last statement
// that proved the session alive, and a holder normally goes on holding
// past it: its belief is known to be stale only once the lock was granted
// to another client, which the server did only after it had ended the
// holder's session. The window then starts at that grant.
func staleBeliefs(r *Result, hs holdings, lastStatement bool, record func(Window)) {
	for i := range hs.all {
		x := &hs.all[i]
		// A client frozen before it read its grant believes only from c_H.
		from := max(x.end(), x.c)
		if !x.proven || x.believed <= from {
			continue
		}
		after := x.end()
		if lastStatement {
			after = from
		}
		k, _ := slices.BinarySearchFunc(hs.byC, after, func(a int32, t int64) int { return cmp.Compare(hs.all[a].c, t) })
		var newer *holding
		for ; k < len(hs.byC) && newer == nil; k++ {
			if y := &hs.all[hs.byC[k]]; y.client != x.client {
				newer = y
			}
		}
		if lastStatement {
			if newer == nil || newer.c >= x.believed {
				continue
			}
			from = newer.c
		}
		r.Counts["stale_beliefs"]++
		var writes []int64
		for w := x.firstWrite; w >= 0; w = hs.writes[w].next {
			if t := hs.writes[w].t; t >= from && t < x.believed {
				writes = append(writes, hs.writes[w].idx)
			}
		}
		r.Counts["stale_writes"] += int64(len(writes))
		var b strings.Builder
		proof := "its lease was valid at least until"
		if lastStatement {
			proof = "its session last proved alive by a statement sent at"
		}
		fmt.Fprintf(&b, "%s believed it held the lock from %s until %s; %s %s", x.who(),
			history.Seconds(from), believedUntil(x), proof, history.Seconds(x.end()))
		if x.upper > 0 {
			fmt.Fprintf(&b, " and expired by %s", history.Seconds(x.upper))
		}
		events := []int64{x.okIdx, x.endIdx()}
		clients, tokens := []string{x.client}, []int64{x.token}
		if newer != nil {
			fmt.Fprintf(&b, "; %s acquired it at %s", newer.who(), history.Seconds(newer.c))
			events = append(events, newer.okIdx)
			clients, tokens = append(clients, newer.client), append(tokens, newer.token)
		}
		fmt.Fprintf(&b, "; %s attempted %s inside that window.", x.client, plural(int64(len(writes)), "write"))
		events = append(events, writes...)
		slices.Sort(events)
		record(Window{Kind: StaleBelief.Name, From: from, To: x.believed, Clients: clients, Tokens: tokens,
			Events: slices.Compact(events), ExpiredBy: x.upper, Writes: int64(len(writes)), Fault: -1, Message: b.String()})
	}
}

func believedUntil(x *holding) string {
	switch {
	case x.released:
		return history.Seconds(x.believed) + " (its release)"
	case x.killed:
		return history.Seconds(x.believed) + " (its kill)"
	}
	return history.Seconds(x.believed) + " (the end of the run)"
}

// kill is a client's death at the nemesis's hands.
type kill struct {
	client string
	time   int64
}

// kills lists the clients h says were killed, and when.
func kills(h []history.Event) []kill {
	var out []kill
	for i := range h {
		for _, c := range history.Killed(h[i]) {
			out = append(out, kill{c, h[i].Time})
		}
	}
	return out
}

// faultsOf lists the faults injected, each ending at its heal or at the end
// of the history.
func faultsOf(h []history.Event, end int64) []FaultEffect {
	var out []FaultEffect
	for _, e := range h {
		if e.Process != history.Nemesis || e.Type != history.Info {
			continue
		}
		switch e.F {
		case history.Start:
			out = append(out, FaultEffect{Event: e.Index, Fault: e.Fault, Start: e.Time, End: end, Targets: e.Targets})
		case history.Stop:
			// A stop heals every open fault of its kind.
			for i := range out {
				if out[i].Fault == e.Fault && out[i].End == end && out[i].Start <= e.Time {
					out[i].End = e.Time
				}
			}
		}
	}
	for _, e := range h {
		if e.Process != history.Nemesis || e.F != history.Healthy {
			continue
		}
		// The healthy event follows the heal of the faults of its kind
		// that the heal ended.
		for i := range out {
			f := &out[i]
			if f.Fault != e.Fault || f.End == end || f.End > e.Time || f.Healthy != 0 || f.Unhealthy != "" {
				continue
			}
			if e.Type == history.Info {
				f.Healthy = max(1, e.Time-f.End)
			} else {
				f.Unhealthy = cmp.Or(e.Error, "the service did not answer again")
			}
		}
	}
	return out
}

// inForceUntil is when f stopped acting on the service: its heal, or the
// service's recovery after it, or the end of the run if it never came.
func (f *FaultEffect) inForceUntil(end int64) int64 {
	if f.Unhealthy != "" {
		return end
	}
	return f.End + f.Healthy
}

// hitHolders marks the faults that targeted a client holding the lock when
// they started, or to which a window is credited.
func hitHolders(hs holdings, faults []FaultEffect) {
	for i := range faults {
		f := &faults[i]
		f.HitHolder = f.StaleWindows+f.TwoHolders > 0
		for _, x := range hs.all {
			if x.c <= f.Start && (f.Start < x.believed || x.killed && f.Start == x.believed) && slices.Contains(f.Targets, x.client) {
				f.HitHolder = true
				// A holder killed outright never holds past its lease;
				// its lease must expire for anyone else to go on.
				f.KilledHolder = f.KilledHolder || x.killed && f.Start == x.believed
			}
		}
	}
}

// heldThrough marks the faults that kept the lock from everyone else
// until the nemesis began healing them (a resumed client may release
// before the heal is recorded as done), in one of two ways:
//   - from the fault's start: no client the fault did not freeze was
//     granted the lock, while one it froze held it, either from before the
//     start or granted by the server while frozen (its acquire completes
//     only after the heal, and is the first grant after the start);
//   - from a release during the fault: a pause chooses the holder a moment
//     before it stops it, and the holder may have released and asked for
//     the lock again in between (its acquire invoked before the fault
//     started). Others are then granted the lock during the fault until
//     the server grants it to the frozen waiter, whose acquire completes
//     only after the heal and is the next grant after the previous
//     holder's; from that holder's release on, everyone waits. This counts
//     when it kept the lock from everyone for at least half the fault,
//     so that a pause that merely ended as the waiter's turn came does
//     not.
func heldThrough(hs holdings, faults []FaultEffect, h []history.Event) {
	target := func(f *FaultEffect, x *holding) bool { return slices.Contains(f.Targets, x.client) }
	for i := range faults {
		f := &faults[i]
		healing := f.End
		for _, e := range h {
			if e.Process == history.Nemesis && e.Type == history.Invoke && e.F == history.Stop && e.Fault == f.Fault &&
				e.Time >= f.Start && e.Time <= f.End {
				healing = e.Time
			}
		}
		held := false
		for j := range hs.all {
			x := &hs.all[j]
			held = held || (x.c <= f.Start && x.believed >= healing && target(f, x))
		}
		k, _ := slices.BinarySearchFunc(hs.byC, f.Start, func(a int32, t int64) int { return cmp.Compare(hs.all[a].c, t) })
		if k < len(hs.byC) {
			if first := &hs.all[hs.byC[k]]; first.c >= healing && target(f, first) {
				held = true
			}
		}
		for ; held && k < len(hs.byC) && hs.all[hs.byC[k]].c <= healing; k++ {
			held = target(f, &hs.all[hs.byC[k]])
		}
		if held {
			f.HeldThrough, f.HeldFrom = true, f.Start
			continue
		}
		// The late pause: y is the first grant completing after the heal
		// began, p the grant before it.
		k, _ = slices.BinarySearchFunc(hs.byC, healing, func(a int32, t int64) int { return cmp.Compare(hs.all[a].c, t) })
		if k == 0 || k == len(hs.byC) {
			continue
		}
		y, p := &hs.all[hs.byC[k]], &hs.all[hs.byC[k-1]]
		if !target(f, y) || !p.released || acquireInvoked(h, y) > f.Start {
			continue
		}
		if from := max(p.believed, f.Start); 2*(healing-from) >= healing-f.Start {
			f.HeldThrough, f.HeldFrom = true, from
		}
	}
}

// acquireInvoked is the time x's client invoked the acquire that granted
// x: its last acquire invocation before the grant.
func acquireInvoked(h []history.Event, x *holding) int64 {
	for i := min(x.okIdx, int64(len(h))-1); i >= 0; i-- {
		if e := h[i]; e.Process == x.client && e.F == history.Acquire && e.Type == history.Invoke && e.Time <= x.c {
			return e.Time
		}
	}
	return x.c
}

// Reach is what one checker's result says of whether the run's faults
// reached what that checker judges.
type Reach int

const (
	// Silent: the result says nothing of it.
	Silent Reach = iota
	// Missed: faults were injected, and none reached it.
	Missed
	// Reached: a fault reached it.
	Reached
)

// Reacher is a checker whose results tell whether faults reached what it
// judges; Evidence asks each result's checker.
type Reacher interface {
	Checker
	Reach(Result) Reach
}

// Reach implements Reacher: a fault reached a holder if it opened a window,
// or, for a lock with no TTL, kept the lock from everyone else.
func (Exclusion) Reach(r Result) Reach {
	switch {
	case r.Valid != Valid || r.Counts["faults"] == 0:
		return Silent
	case r.Counts["faults_effective"]+r.Counts["faults_held_through"] > 0:
		return Reached
	}
	return Missed
}

// Evidence says how much a verdict is worth: a valid run whose faults
// never put a holder past its lease (or, for a lock with no TTL, never
// kept the lock from everyone else) tested less than it seems. It returns
// "" when there is nothing to say. Each result's own checker says whether
// the faults reached what it judges (Reacher), and one that did settles
// it: a run whose store rejected a stale request was reached all the same
// (a request that landed after a newer holder's, a delayed write whose
// client had given up on it and let the lock go, put the data at risk with
// no holder past its lease, and only the fence kept it out).
func Evidence(verdict Verdict, rs []Result) string {
	if verdict != Valid {
		return ""
	}
	weak := false
	for _, r := range rs {
		c, ok := reacher(r.Checker)
		if !ok {
			continue
		}
		switch c.Reach(r) {
		case Reached:
			return ""
		case Missed:
			weak = true
		}
	}
	if weak {
		return WeakEvidence
	}
	return ""
}

// reacher is the checker of this build named name, if it is a Reacher.
func reacher(name string) (Reacher, bool) {
	for _, c := range slices.Concat(All(0), For("set", 0)) {
		if r, ok := c.(Reacher); ok && c.Name() == name {
			return r, true
		}
	}
	return nil, false
}

// WeakEvidence is what Evidence says of a valid run whose faults reached
// no holder.
const WeakEvidence = "valid, but no fault reached a holder: weak evidence"

func millis(d int64) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// Validate refuses what no acquire or renewal of this lock can have
// recorded, naming the history line (the history is judged in time order,
// one event per line): an attempt sent after its own acquire's reply; for
// a lease granted per acquire, an attempt sent before its acquire was
// invoked (on a session's lease it is the session's last keep-alive, which
// may well be older); a negative TTL (none, or 0, means the configured
// one). Each would inflate a proven lease into a confident verdict. The
// error wraps history.ErrMalformed.
func (l Lease) Validate(h []history.Event) error {
	invoked := map[string]int64{} // a client's open acquire's invocation
	for i := range h {
		e := &h[i]
		if e.TTL < 0 {
			return fmt.Errorf("%w: history line %d: %s's %s has a negative ttl %d", history.ErrMalformed, i+1, e.Process, e.F, e.TTL)
		}
		if e.F != history.Acquire || e.Process == history.Nemesis {
			continue
		}
		if e.Type == history.Invoke {
			invoked[e.Process] = e.Time
			continue
		}
		if e.Attempt == 0 {
			continue
		}
		if e.Attempt > e.Time {
			return fmt.Errorf("%w: history line %d: %s's acquire records an attempt sent at %s, after its reply at %s",
				history.ErrMalformed, i+1, e.Process, history.Seconds(e.Attempt), history.Seconds(e.Time))
		}
		if t, ok := invoked[e.Process]; ok && !l.Session && e.Attempt < t {
			return fmt.Errorf("%w: history line %d: %s's acquire records an attempt sent at %s, before the acquire was invoked at %s, and this lock's lease is granted by the acquire itself",
				history.ErrMalformed, i+1, e.Process, history.Seconds(e.Attempt), history.Seconds(t))
		}
	}
	return nil
}
