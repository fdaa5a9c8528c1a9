package report

import (
	"bytes"
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// step is one thing that happened in an incident, told in words and as
// sequence-diagram statements.
type step struct {
	T    int64
	Text string
	Seq  []string
}

// Names of the sequence diagram's participants besides the clients.
const (
	lockID  = "lock"
	storeID = "store"
)

// tell writes an incident's story from the history: the client's acquire,
// what it read, the fault that froze it, the newer holders (or, without a
// lock, the other writers) meanwhile, and what became of its write.
func (an *analysis) tell(inc *incident) {
	inc.title = an.title(inc)
	h, w := inc.hold, inc.write
	if h == nil && w == nil {
		return
	}
	c, id := inc.client, mermaidID(inc.client)
	var start, decisive int64
	var marks []*mark
	switch {
	case h != nil:
		start, decisive, marks = h.start, h.end, an.marksIn(h)
		if w != nil && !slices.Contains(marks, w) {
			marks = append(marks, w)
		}
	case inc.read != nil:
		start, marks = inc.read.call, []*mark{inc.read, w}
	default:
		start, marks = w.call, []*mark{w}
	}
	if w != nil {
		decisive = w.ret
	}
	// The others come first: they decide the diagram's participants.
	steps := an.tellOthers(inc, start, decisive)
	add := func(t int64, text string, seq ...string) { steps = append(steps, step{T: t, Text: text, Seq: seq}) }

	if h != nil {
		inc.usesLock = true
		add(h.start, fmt.Sprintf("%s acquired %s", c, tokenName(h.token)),
			fmt.Sprintf("%s->>%s: acquire", id, lockID), fmt.Sprintf("%s-->>%s: %s", lockID, id, tokenName(h.token)))
		for _, ll := range an.lanes[c].lost {
			if ll.t >= h.start && ll.t <= decisive {
				add(ll.t, fmt.Sprintf("%s learned its lease was lost", c), fmt.Sprintf("%s-->>%s: renewal refused, lease lost", lockID, id))
			}
		}
	}
	for _, m := range marks {
		switch {
		case m == w:
			steps = append(steps, an.tellWrite(inc, m)...)
		case m.call <= decisive:
			add(m.call, fmt.Sprintf("%s %s", c, describeMark(m)), markSeq(id, m)...)
		}
	}
	for _, f := range an.faults {
		if !slices.Contains(f.targets, c) || f.start < start || f.start > decisive {
			continue
		}
		// A pause is told as such; other faults by their names.
		began, ended, what := fmt.Sprintf("paused %s", c), fmt.Sprintf("resumed %s", c), "paused"
		if f.kind != "pause" {
			began, ended, what = fmt.Sprintf("started %s on %s", f.kind, c), fmt.Sprintf("healed %s on %s", f.kind, c), f.kind
		}
		add(f.start, fmt.Sprintf("the nemesis %s for %s", began, seconds(f.end-f.start)),
			fmt.Sprintf("Note over %s: %s by the nemesis at %s for %s", id, mermaidText(what), secondsPlain(f.start), seconds(f.end-f.start)))
		if f.healed && f.end <= decisive {
			add(f.end, "the nemesis "+ended,
				fmt.Sprintf("Note over %s: %s at %s", id, mermaidText(strings.TrimSuffix(ended, " "+c)), secondsPlain(f.end)))
		}
		if f.healthy > 0 && f.unhealthy == "" && f.healthy <= decisive {
			add(f.healthy, fmt.Sprintf("the service answered again, %s after the heal", seconds(f.healthy-f.end)),
				fmt.Sprintf("Note over %s: service healthy at %s", lockID, secondsPlain(f.healthy)))
		}
	}
	if h != nil {
		steps = append(steps, an.windowSteps(c, h.token, h.start, max(decisive, h.end))...)
	}
	slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.T, b.T) })
	inc.steps = steps
}

// tokenName is "token 46", or "the lock" for a lock without tokens.
func tokenName(token int64) string {
	if token == 0 {
		return "the lock"
	}
	return fmt.Sprintf("token %d", token)
}

// withToken is " with token 46", or nothing without tokens.
func withToken(token int64) string {
	if token == 0 {
		return ""
	}
	return fmt.Sprintf(" with token %d", token)
}

// tellWrite tells the incident's write and its outcome, with the store's
// view of it: the value it replaced and the newest token it had seen.
func (an *analysis) tellWrite(inc *incident, m *mark) []step {
	c, id := inc.client, mermaidID(inc.client)
	v := m.shown()
	out := []step{{T: m.call, Text: fmt.Sprintf("%s wrote %s%s", c, v, withToken(m.token)),
		Seq: []string{fmt.Sprintf("%s->>%s: write %s%s", id, storeID, v, withToken(m.token))}}}
	e, inLog := an.storeByReq(m.req)
	newer := ""
	if inLog && e.MaxToken > m.token {
		newer = fmt.Sprintf("token %d", e.MaxToken)
		if from := an.newestFrom(inc); from != "" {
			newer += " from " + from
		}
	}
	// Values before and after are the counter's;
	// the set workload's entries carry sets instead.
	counter := inLog && e.Set == nil
	var text, reply string
	switch m.outcome {
	case outOK:
		text = fmt.Sprintf("the store accepted %s's write", c)
		reply = "accepted"
		if counter {
			text += fmt.Sprintf(" of %s over %d", v, e.Prev)
			reply += fmt.Sprintf(" over %d", e.Prev)
		}
		if newer != "" {
			text += fmt.Sprintf(", although it had already seen %s: a stale write", newer)
			reply += fmt.Sprintf(" although it had seen %s", newer)
			if counter && e.Prev >= e.Value {
				text += fmt.Sprintf(", taking the value back from %d to %d (a regression)", e.Prev, e.Value)
			}
		} else if counter && e.Prev >= e.Value {
			text += fmt.Sprintf(": a regression, taking the value back from %d to %d", e.Prev, e.Value)
			reply += ", a regression"
		}
		// What the regression cost is the lost-updates checker's call
		// (the next write may restore it): its findings follow the story.
	case outRejected:
		text = fmt.Sprintf("the store rejected %s's write", c)
		reply = "rejected"
		if reason := cmp.Or(e.Reason, m.err); reason != "" {
			text += " (" + reason + ")"
			reply += ", " + reason
		}
		if newer != "" {
			text += fmt.Sprintf(": it had already seen %s, and the fence held", newer)
		}
	default:
		text = fmt.Sprintf("%s's write of %s has an unknown outcome", c, v)
		reply = "no answer"
	}
	// The store's own time says when it decided, which orders the
	// decision against other clients' writes.
	at := m.ret
	if inLog {
		at = e.Time
	}
	out = append(out, step{T: at, Text: text, Seq: []string{fmt.Sprintf("%s-->>%s: %s", storeID, id, mermaidText(reply))}})
	if m.outcome == outOK && counter {
		if next, ok := an.nextWrite(*e); ok {
			whose := c + "'s"
			if next.Client == c {
				whose = "its own"
			}
			s := step{T: next.Time, Text: fmt.Sprintf("%s wrote %d%s, over %s %s", next.Client, next.Value, withToken(next.Token), whose, v)}
			if next.Client == c || slices.Contains(inc.others, next.Client) {
				nid := mermaidID(next.Client)
				s.Seq = []string{fmt.Sprintf("%s->>%s: write %d%s", nid, storeID, next.Value, withToken(next.Token)),
					fmt.Sprintf("%s-->>%s: accepted over %s", storeID, nid, v)}
			}
			out = append(out, s)
		}
	}
	return out
}

// newestFrom names the client whose newer token the store had accepted,
// as the fence checker reported it.
func (an *analysis) newestFrom(inc *incident) string {
	for _, row := range inc.rows {
		if row.a.KindOf().NewerHolder && len(row.a.Clients) > 1 {
			return row.a.Clients[1]
		}
	}
	return ""
}

// nextWrite is the first write the store accepted after e.
func (an *analysis) nextWrite(e store.Entry) (store.Entry, bool) {
	i, _ := slices.BinarySearchFunc(an.in.Store, e.Seq+1, func(x store.Entry, seq int64) int { return cmp.Compare(x.Seq, seq) })
	for ; i < len(an.in.Store); i++ {
		x := an.in.Store[i]
		if x.Op == "write" && x.Outcome == store.Accepted && x.Key == e.Key {
			return x, true
		}
	}
	return store.Entry{}, false
}

// episode is another client's hold, or without a lock its write, while
// the incident's client was between its read and its write.
type episode struct {
	client string
	start  int64
	token  int64
	// accepted are the values it wrote that the store accepted.
	accepted []int64
	step     step
}

// tellOthers tells what other clients did meanwhile: the holds of newer
// tokens, or without a lock the other clients' accepted writes. The first
// and the last are told in full and those between as one summary, so a
// long pause still reads as one story and one diagram.
func (an *analysis) tellOthers(inc *incident, from, until int64) []step {
	var eps []episode
	if inc.hold != nil {
		for _, h := range an.holdsBetween(inc.client, from, until) {
			if inc.hold.token > 0 && h.token <= inc.hold.token {
				continue
			}
			e := episode{client: h.client, start: h.start, token: h.token, step: an.tellHold(h, until)}
			for _, m := range an.marksIn(h) {
				if m.f == history.Write && m.outcome == outOK && m.value != nil {
					e.accepted = append(e.accepted, *m.value)
				}
			}
			eps = append(eps, e)
		}
	} else {
		// Writes that completed before the client's own was invoked; the
		// one the store took next is told as the aftermath.
		if inc.write != nil {
			until = inc.write.call
		}
		for _, m := range an.writesBetween(inc.client, from, until) {
			id := mermaidID(m.client)
			eps = append(eps, episode{client: m.client, start: m.call, accepted: []int64{*m.value}, step: step{T: m.call,
				Text: fmt.Sprintf("%s wrote %d (accepted)", m.client, *m.value),
				Seq:  []string{fmt.Sprintf("%s->>%s: write %d", id, storeID, *m.value), fmt.Sprintf("%s-->>%s: accepted", storeID, id)}}})
		}
	}
	if len(eps) == 0 {
		return nil
	}
	first, last := eps[0], eps[len(eps)-1]
	inc.others = append(inc.others, first.client)
	if last.client != first.client {
		inc.others = append(inc.others, last.client)
	}
	out := []step{first.step}
	if len(eps) > 2 {
		out = append(out, summarizeEpisodes(eps[1:len(eps)-1], first.client, last.client, inc.hold != nil))
	}
	if len(eps) > 1 {
		out = append(out, last.step)
	}
	return out
}

// summarizeEpisodes tells the episodes between the first and the last as one
// step, a note over the two clients told in full.
func summarizeEpisodes(mid []episode, first, last string, holds bool) step {
	var who []string
	var lo, hi *int64
	writes := 0
	for _, e := range mid {
		if !slices.Contains(who, e.client) {
			who = append(who, e.client)
		}
		for _, v := range e.accepted {
			writes++
			if lo == nil || v < *lo {
				lo = &v
			}
			if hi == nil || v > *hi {
				hi = &v
			}
		}
	}
	var text string
	switch {
	case !holds && writes == 1:
		text = fmt.Sprintf("%s wrote once more (accepted)", joinAnd(who))
	case !holds:
		text = fmt.Sprintf("%s wrote %d times more (accepted)", joinAnd(who), writes)
	case mid[0].token > 0:
		tokens := fmt.Sprintf("tokens %d to %d", mid[0].token, mid[len(mid)-1].token)
		if len(mid) == 1 {
			tokens = fmt.Sprintf("token %d", mid[0].token)
		}
		text = fmt.Sprintf("%s held %s in turn (%s, %s accepted)", joinAnd(who), tokens, plural(int64(len(mid)), "hold"), plural(int64(writes), "write"))
	default:
		text = fmt.Sprintf("%s held the lock in turn (%s, %s accepted)", joinAnd(who), plural(int64(len(mid)), "hold"), plural(int64(writes), "write"))
	}
	switch {
	case lo == nil:
	case *lo == *hi:
		text += fmt.Sprintf(", writing %d", *lo)
	default:
		text += fmt.Sprintf(", writing %d up to %d", *lo, *hi)
	}
	over := mermaidID(first)
	if last != first {
		over += "," + mermaidID(last)
	}
	return step{T: mid[0].start, Text: text, Seq: []string{fmt.Sprintf("Note over %s: %s", over, mermaidText(text))}}
}

// writesBetween returns the accepted writes, by any client but skip,
// invoked after from and completed by to, ordered by invocation.
func (an *analysis) writesBetween(skip string, from, to int64) []*mark {
	var out []*mark
	for _, name := range an.clients {
		if name == skip {
			continue
		}
		l := an.lanes[name]
		i, _ := slices.BinarySearchFunc(l.marks, from+1, func(m mark, t int64) int { return cmp.Compare(m.call, t) })
		for ; i < len(l.marks) && l.marks[i].call <= to; i++ {
			if m := &l.marks[i]; m.f == history.Write && m.outcome == outOK && m.value != nil && m.ret <= to {
				out = append(out, m)
			}
		}
	}
	slices.SortFunc(out, func(a, b *mark) int { return cmp.Compare(a.call, b.call) })
	return out
}

// tellHold tells one newer hold up to a time: its acquire and what it read
// and wrote by then.
func (an *analysis) tellHold(h *hold, until int64) step {
	id := mermaidID(h.client)
	s := step{T: h.start, Seq: []string{fmt.Sprintf("%s->>%s: acquire", id, lockID), fmt.Sprintf("%s-->>%s: %s", lockID, id, tokenName(h.token))}}
	var did []string
	for _, m := range an.marksIn(h) {
		if m.ret > until {
			break
		}
		did = append(did, describeMark(m))
		s.Seq = append(s.Seq, markSeq(id, m)...)
	}
	s.Text = fmt.Sprintf("%s acquired %s", h.client, tokenName(h.token))
	if len(did) > 0 {
		s.Text += ", " + joinAnd(did)
	}
	return s
}

func describeMark(m *mark) string {
	v := m.shown()
	if m.f == history.Read {
		switch m.outcome {
		case outOK:
			return "read " + v
		case outRejected:
			return "had its read rejected"
		}
		return "read with an unknown outcome"
	}
	return fmt.Sprintf("wrote %s (%s)", v, m.outcome)
}

// markSeq draws a read or a write as a request and its answer.
func markSeq(id string, m *mark) []string {
	v := m.shown()
	if m.f == history.Read {
		reply := "x is " + v
		if m.set {
			reply = "x holds " + v
		}
		if m.outcome != outOK {
			reply = string(m.outcome)
		}
		return []string{fmt.Sprintf("%s->>%s: read x%s", id, storeID, withToken(m.token)), fmt.Sprintf("%s-->>%s: %s", storeID, id, reply)}
	}
	return []string{fmt.Sprintf("%s->>%s: write %s%s", id, storeID, v, withToken(m.token)), fmt.Sprintf("%s-->>%s: %s", storeID, id, m.outcome)}
}

// title is the incident's headline: who wrote what with which token, the
// fault that put the writer in that position, and, for a stale write, who
// already held the newer token.
func (an *analysis) title(inc *incident) string {
	if m := inc.write; m != nil {
		at, newer := m.call, ""
		stale := false
		if e, ok := an.storeByReq(m.req); ok {
			at = e.Time
			if e.MaxToken > m.token {
				stale = true
				newer = fmt.Sprintf("token %d", e.MaxToken)
				if from := an.newestFrom(inc); from != "" {
					newer = fmt.Sprintf("%s already held token %d", from, e.MaxToken)
				} else {
					newer = "the store had already seen " + newer
				}
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s wrote %s", inc.client, m.shown())
		if m.token > 0 {
			fmt.Fprintf(&b, " with %stoken %d", map[bool]string{true: "stale "}[stale], m.token)
		}
		if f := an.faultOn(inc.client, an.holdStart(inc.client, m.token, m.call), m.call); f != nil {
			if m.call >= f.end {
				fmt.Fprintf(&b, " after a %s %s", seconds(f.end-f.start), f.kind)
			} else {
				fmt.Fprintf(&b, " during a %s", f.kind)
			}
		}
		if newer != "" {
			b.WriteString("; " + newer)
		}
		fmt.Fprintf(&b, ": %s at %s", m.outcome, history.Seconds(at))
		return b.String()
	}
	if len(inc.rows) > 0 {
		a := inc.rows[0].a
		if inc.client != "" {
			return fmt.Sprintf("%s: %s with token %d", a.Kind, inc.client, inc.token)
		}
		return a.Kind
	}
	return inc.client
}

// faultOn is the fault that can have made client c's write at t late: the
// last one aimed at c that began while c held the lock it wrote under
// (hold from holdStart), or, when no holding is known (a run without a
// lock), one still in force at t.
func (an *analysis) faultOn(c string, holdStart, t int64) *fault {
	var last *fault
	for i := range an.faults {
		f := &an.faults[i]
		if !slices.Contains(f.targets, c) || f.start > t {
			continue
		}
		if holdStart >= 0 && f.start >= holdStart || holdStart < 0 && f.end >= t {
			last = f
		}
	}
	return last
}

// holdStart is when c acquired the lock it wrote under at t: the holding
// with the write's token, or without tokens the last one begun by t; -1
// when no holding is recorded.
func (an *analysis) holdStart(c string, token, t int64) int64 {
	start := int64(-1)
	if l := an.lanes[c]; l != nil {
		for _, h := range l.holds {
			switch {
			case token > 0 && h.token == token:
				return h.start
			case token <= 0 && h.start <= t:
				start = h.start
			}
		}
	}
	return start
}

func value(v *int64) string {
	if v == nil {
		return "?"
	}
	return strconv.FormatInt(*v, 10)
}

func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok {
		return fmt.Sprintf("%d %sies", n, stem)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// secondsPlain is history.Seconds without characters Mermaid could trip on.
func secondsPlain(t int64) string { return strconv.FormatFloat(float64(t)/1e9, 'f', 3, 64) + " s" }

var (
	unsafeMermaid = regexp.MustCompile(`[^A-Za-z0-9 .,()+=/_-]+`)
	spaces        = regexp.MustCompile(`\s+`)
	mermaidName   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
)

// mermaidText keeps only characters that cannot end or reinterpret a
// Mermaid statement: no ';', '#', quotes, colons or angle brackets.
func mermaidText(s string) string {
	s = strings.ReplaceAll(s, "<", " below ")
	s = strings.ReplaceAll(s, ">", " above ")
	return strings.TrimSpace(spaces.ReplaceAllString(unsafeMermaid.ReplaceAllString(s, " "), " "))
}

// mermaidKeywords cannot be participant ids.
var mermaidKeywords = []string{"end", "loop", "alt", "else", "opt", "par", "and", "rect", "critical", "break",
	"box", "create", "destroy", "activate", "deactivate", "note", "autonumber", "title", "links", "link",
	"properties", "details", "participant", "actor", "sequencediagram", lockID, storeID}

func mermaidID(name string) string {
	if mermaidName.MatchString(name) && !slices.Contains(mermaidKeywords, strings.ToLower(name)) {
		return name
	}
	return "p_" + regexp.MustCompile(`[^A-Za-z0-9_]`).ReplaceAllString(name, "_")
}

// markdown renders anomalies.md.
func (an *analysis) markdown() []byte {
	var b bytes.Buffer
	name := cmp.Or(an.test.Name, "run")
	fmt.Fprintf(&b, "# Anomalies: %s", name)
	if an.testErr == nil {
		fmt.Fprintf(&b, ", seed %d", an.test.Config.Seed)
	}
	b.WriteString("\n\n")
	switch {
	case len(an.rows) == 0 && len(an.in.Results) == 0:
		b.WriteString("No anomalies to tell: this run has not been checked.\n")
		return b.Bytes()
	case len(an.rows) == 0:
		fmt.Fprintf(&b, "No anomalies: every checker found the history consistent (verdict %s)%s.\n", an.in.Verdict, an.rejectedNote())
		return b.Bytes()
	}
	fmt.Fprintf(&b, "Verdict: **%s**. %s from the checkers, in %s. Times are seconds since the run started.\n",
		cmp.Or(string(an.in.Verdict), "not checked"), plural(int64(len(an.rows)), "anomaly"), plural(int64(len(an.incidents)), "incident"))
	for _, inc := range an.incidents {
		fmt.Fprintf(&b, "\n## Incident %d: %s\n\n", inc.n, inc.title)
		for i, s := range inc.steps {
			fmt.Fprintf(&b, "%d. **%s** %s.\n", i+1, history.Seconds(s.T), s.Text)
		}
		if len(inc.steps) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("What the checkers said:\n\n")
		for _, row := range inc.rows {
			at := ""
			if row.a.Time > 0 {
				at = " at " + history.Seconds(row.a.Time)
			}
			fmt.Fprintf(&b, "- **%s**, %s%s: %s\n", row.checker, row.a.Kind, at, row.a.Message)
		}
		if seq := inc.mermaid(); len(seq) > 0 {
			b.WriteString("\n```mermaid\n")
			for _, l := range seq {
				b.WriteString(l + "\n")
			}
			b.WriteString("```\n")
		}
	}
	return b.Bytes()
}

// mermaid is the incident's sequence diagram, one statement a line.
func (inc *incident) mermaid() []string {
	if len(inc.steps) == 0 {
		return nil
	}
	out := []string{"sequenceDiagram", "    participant " + mermaidID(inc.client)}
	for _, o := range inc.others {
		out = append(out, "    participant "+mermaidID(o))
	}
	if inc.usesLock {
		out = append(out, "    participant "+lockID+" as lock service")
	}
	out = append(out, "    participant "+storeID)
	for _, s := range inc.steps {
		for _, l := range s.Seq {
			out = append(out, "    "+l)
		}
	}
	if m := inc.write; m != nil && len(inc.rows) > 0 {
		var kinds []string
		for _, row := range inc.rows {
			if !slices.Contains(kinds, row.a.Kind) {
				kinds = append(kinds, row.a.Kind)
			}
		}
		out = append(out, fmt.Sprintf("    Note over %s,%s: %s", mermaidID(inc.client), storeID, mermaidText(strings.Join(kinds, ", "))))
	}
	return out
}

// rejectedNote mentions the writes the store refused: with a fence, the
// evidence that it worked.
func (an *analysis) rejectedNote() string {
	var n int64
	for _, e := range an.in.Store {
		if e.Op == "write" && e.Outcome == store.Rejected {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; the store rejected %s", plural(n, "write"))
}
