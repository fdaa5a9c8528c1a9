package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"

	"github.com/lockbench/lockbench/rundir"
)

// The test data are two real runs: testdata/invalid (no fence: c3, paused
// with token 46, wrote over c1's token 68) and testdata/valid (fence all:
// the store rejected the paused clients' writes).

func writeRun(t testing.TB, name string) string {
	t.Helper()
	in, err := Load(filepath.Join("testdata", name), "x")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readFile(t testing.TB, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// between returns the text from the first occurrence of start to the
// first end after it.
func between(t testing.TB, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("no %q in the page", start)
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		t.Fatalf("no %q after %q", end, start)
	}
	return s[i : i+j+len(end)]
}

var xmlns = regexp.MustCompile(`xmlns(:\w+)?="http://www\.w3\.org/[^"]*"`)

// checkSelfContained fails on any reference to the network: the page must
// open from disk alone. SVG namespace declarations are names, not fetches.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	rest := xmlns.ReplaceAllString(page, "")
	for _, scheme := range []string{"http://", "https://", "//cdn", "@import"} {
		if i := strings.Index(rest, scheme); i >= 0 {
			t.Errorf("page refers to %q: …%s…", scheme, rest[max(i-60, 0):min(i+60, len(rest))])
		}
	}
}

func TestWriteInvalidRun(t *testing.T) {
	dir := writeRun(t, "invalid")
	page := readFile(t, dir, rundir.HTMLFile)
	checkSelfContained(t, page)

	overview := between(t, page, `id="ov-timeline"`, "</svg>")
	if n := strings.Count(overview, `<g class="lane"`); n != 5 {
		t.Errorf("overview has %d lanes, want one per client (5)", n)
	}
	for _, c := range []string{"c1", "c2", "c3", "c4", "c5"} {
		if !strings.Contains(overview, `data-client="`+c+`"`) {
			t.Errorf("no lane for %s", c)
		}
	}
	if n := strings.Count(overview, `class="fault"`); n != 3 {
		t.Errorf("overview shades %d fault windows, want the run's 3 pauses", n)
	}
	if !strings.Contains(overview, `class="fault-target"`) {
		t.Error("the paused client's lane is not marked")
	}
	if !strings.Contains(overview, `op write accepted stale`) {
		t.Error("the stale write is not marked on the overview")
	}
	if !strings.Contains(overview, `class="lease-lost"`) {
		t.Error("no lease-lost mark")
	}

	table := between(t, page, `<table id="anomaly-table">`, "</table>")
	if n := strings.Count(table, `class="anomaly"`); n != 7 {
		t.Errorf("anomaly table has %d rows, want the 7 of results.json", n)
	}
	for _, want := range []string{"stale-write-accepted", "lost-update", "regression", "non-linearizable", "c3", `href="#incident-1"`, `href="#event-544"`} {
		if !strings.Contains(table, want) {
			t.Errorf("anomaly table lacks %q", want)
		}
	}
	// Every link into the page lands somewhere.
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("link to #%s has no target", m[1])
		}
	}
	for _, want := range []string{`id="incident-1"`, `id="incident-2"`, "Incident 1: c3 wrote 46 with stale token 46", `class="plot"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<svg class="plot"`); n != 8 {
		t.Errorf("page has %d plots, want latency and throughput for each of 4 operation types", n)
	}
	for _, f := range []string{"acquire", "read", "write", "release"} {
		if !strings.Contains(page, f+" throughput") {
			t.Errorf("no throughput plot of %s", f)
		}
	}

	md := readFile(t, dir, rundir.AnomaliesFile)
	for _, want := range []string{"c3 acquired token 46", "c3 read 45", "the nemesis paused c3 for 4.0 s", "c1 acquired token 68",
		"c3 learned its lease was lost", "the store accepted c3's write of 46 over 66", "token 68 from c1",
		"a regression", "erasing 21 increments, 21 acknowledged", "c3's acknowledged write of 46 (token 46, store seq 134, 9.684 s) is not in the final value"} {
		if !strings.Contains(md, want) {
			t.Errorf("anomalies.md lacks %q", want)
		}
	}
	blocks := mermaidBlocks(md)
	if len(blocks) != 2 {
		t.Fatalf("anomalies.md has %d mermaid blocks, want one per incident (2)", len(blocks))
	}
	for _, b := range blocks {
		if err := validateMermaid(b); err != nil {
			t.Errorf("invalid mermaid: %v\n%s", err, strings.Join(b, "\n"))
		}
	}
	if !strings.Contains(strings.Join(blocks[0], "\n"), "Note over c3: paused by the nemesis") {
		t.Error("the diagram does not show the pause")
	}

	lin := readFile(t, dir, rundir.LinearFile)
	for _, want := range []string{"c3 t46: read 45, wrote 46", `"Tag":"nemesis"`, "lease lost (token 46)"} {
		if !strings.Contains(lin, want) {
			t.Errorf("linear.html lacks %q", want)
		}
	}
}

func TestWriteValidRun(t *testing.T) {
	dir := writeRun(t, "valid")
	page := readFile(t, dir, rundir.HTMLFile)
	checkSelfContained(t, page)
	overview := between(t, page, `id="ov-timeline"`, "</svg>")
	if n := strings.Count(overview, `<g class="lane"`); n != 5 {
		t.Errorf("overview has %d lanes, want 5", n)
	}
	if !strings.Contains(overview, `op write rejected`) {
		t.Error("the rejected stale writes are not on the overview")
	}
	for _, want := range []string{`class="verdict big valid"`, "No anomalies", `id="rejection-1"`, "Rejected by the store: c3 wrote 49 with stale token 49", "the fence held"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="anomaly-table"`) {
		t.Error("a valid run has an anomaly table")
	}
	md := readFile(t, dir, rundir.AnomaliesFile)
	if body := strings.TrimSpace(md[strings.Index(md, "\n"):]); strings.Count(body, "\n") != 0 || !strings.HasPrefix(body, "No anomalies") {
		t.Errorf("anomalies.md of a valid run should say so in one line, got:\n%s", md)
	}
	if lin := readFile(t, dir, rundir.LinearFile); !strings.Contains(lin, "c3 t49: read 48, write 49 rejected") {
		t.Error("linear.html lacks the rejected section")
	}
}

func TestLoadUncheckedRun(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{rundir.TestFile, rundir.HistoryFile, rundir.StoreFile} {
		data, err := os.ReadFile(filepath.Join("testdata", "invalid", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := Load(dir, "x")
	if err != nil {
		t.Fatal(err)
	}
	if in.Verdict != "" || len(in.Notes) != 1 {
		t.Errorf("unchecked run: verdict %q, notes %q", in.Verdict, in.Notes)
	}
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	if page := readFile(t, dir, rundir.HTMLFile); !strings.Contains(page, "not checked") {
		t.Error("the page does not say the run was not checked")
	}
}

// A run that failed before any event still gets its pages.
func TestWriteEmptyRun(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, Input{Notes: []string{"the harness failed"}}); err != nil {
		t.Fatal(err)
	}
	if page := readFile(t, dir, rundir.HTMLFile); !strings.Contains(page, "test configuration unreadable") || !strings.Contains(page, "the harness failed") {
		t.Error("the page does not explain the missing configuration and notes")
	}
	if md := readFile(t, dir, rundir.AnomaliesFile); !strings.Contains(md, "No anomalies") {
		t.Errorf("anomalies.md: %s", md)
	}
}

// An anomaly about counts alone (no client, no events) is listed and
// told, without a story or a zoom.
func TestCountOnlyAnomaly(t *testing.T) {
	in, err := Load(filepath.Join("testdata", "valid"), "x")
	if err != nil {
		t.Fatal(err)
	}
	in.Verdict = checkers.Invalid
	in.Results = append(in.Results, checkers.Result{Checker: "lost-updates", Valid: checkers.Invalid,
		Anomalies: []checkers.Anomaly{{Kind: "missing-increments", Message: "The final value is 3 but 4 writes were acknowledged."}}})
	dir := t.TempDir()
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	page := readFile(t, dir, rundir.HTMLFile)
	if !strings.Contains(page, "Incident 1: missing-increments") || strings.Contains(page, `id="incident-1-timeline"`) {
		t.Error("a count-only anomaly should be an incident without a zoomed timeline")
	}
	md := readFile(t, dir, rundir.AnomaliesFile)
	if !strings.Contains(md, "## Incident 1: missing-increments") || len(mermaidBlocks(md)) != 0 {
		t.Errorf("anomalies.md:\n%s", md)
	}
}

// Without fencing tokens (Redlock) or without a lock at all, anomalies
// still group by the write they are about and the stories still read.
func TestTokenlessRuns(t *testing.T) {
	base, err := Load(filepath.Join("testdata", "invalid"), "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		noLock bool
		want   []string
	}{
		{"no-tokens", false, []string{"c3 acquired the lock", "c3 read 45", "the nemesis paused c3", "c3 wrote 46.", "a regression, taking the value back from 66 to 46", "c3's acknowledged write of 46 (store seq 134",
			"## Incident 1: c3 wrote 46 after a 4.0 s pause: accepted at 9.684 s"}},
		{"no-lock", true, []string{"c3 read 45", "the nemesis paused c3", "c4 wrote 46 (accepted)", "c3 wrote 46.", "a regression, taking the value back from 66 to 46", "c3's acknowledged write of 46 (store seq 134",
			// Without a lock no holding says when c3's turn began, and the
			// pause was over when it wrote.
			"## Incident 1: c3 wrote 46: accepted at 9.684 s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := base
			in.History = nil
			for _, e := range base.History {
				if c.noLock && e.Process != history.Nemesis && e.F != history.Read && e.F != history.Write {
					continue
				}
				e.Token = 0
				in.History = append(in.History, e)
			}
			in.Store = nil
			for _, e := range base.Store {
				e.Token, e.MaxToken = 0, 0
				in.Store = append(in.Store, e)
			}
			cin := checkers.Input{History: in.History, Store: in.Store, Key: "x"}
			in.Results = nil
			for _, ch := range checkers.All(time.Minute) {
				in.Results = append(in.Results, ch.Check(cin))
			}
			in.Verdict = checkers.Overall(in.Results)
			dir := t.TempDir()
			if err := Write(dir, in); err != nil {
				t.Fatal(err)
			}
			md := readFile(t, dir, rundir.AnomaliesFile)
			if n := strings.Count(md, "\n## Incident"); n != 2 {
				t.Errorf("%d incidents, want one per stale write (2):\n%s", n, md)
			}
			for _, want := range c.want {
				if !strings.Contains(md, want) {
					t.Errorf("anomalies.md lacks %q", want)
				}
			}
			for _, b := range mermaidBlocks(md) {
				if err := validateMermaid(b); err != nil {
					t.Errorf("invalid mermaid: %v\n%s", err, strings.Join(b, "\n"))
				}
				if uses := strings.Contains(strings.Join(b, "\n"), "lock service"); uses == c.noLock {
					t.Errorf("lock service in the diagram: %v, want %v", uses, !c.noLock)
				}
			}
			checkSelfContained(t, readFile(t, dir, rundir.HTMLFile))
		})
	}
}

func mermaidBlocks(md string) [][]string {
	var blocks [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case line == "```mermaid":
			in, cur = true, nil
		case in && line == "```":
			in = false
			blocks = append(blocks, cur)
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

var (
	mmParticipant = regexp.MustCompile(`^participant ([A-Za-z][A-Za-z0-9_]*)( as [A-Za-z0-9 ._-]+)?$`)
	mmNote        = regexp.MustCompile(`^Note (?:over|left of|right of) ([A-Za-z][A-Za-z0-9_]*)(?:,([A-Za-z][A-Za-z0-9_]*))?: (.+)$`)
	mmMessage     = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_]*)(-->>|->>|-->|->|--x|-x|--\)|-\))([A-Za-z][A-Za-z0-9_]*): (.+)$`)
	mmText        = regexp.MustCompile(`^[^;#"'<>:{}]+$`)
)

// validateMermaid checks a sequence diagram statement by statement: no
// Mermaid CLI is available, so this is the grammar subset the report uses,
// with every participant declared before use and message texts free of
// characters that end or reinterpret a statement.
func validateMermaid(lines []string) error {
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "sequenceDiagram" {
		return fmt.Errorf("does not start with sequenceDiagram")
	}
	declared := map[string]bool{}
	use := func(ids ...string) error {
		for _, id := range ids {
			if id != "" && !declared[id] {
				return fmt.Errorf("participant %q used before it is declared", id)
			}
		}
		return nil
	}
	statements := 0
	for n, raw := range lines[1:] {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		var err error
		switch {
		case mmParticipant.MatchString(line):
			m := mmParticipant.FindStringSubmatch(line)
			if declared[m[1]] {
				err = fmt.Errorf("participant %q declared twice", m[1])
			}
			declared[m[1]] = true
		case mmNote.MatchString(line):
			m := mmNote.FindStringSubmatch(line)
			err = use(m[1], m[2])
			if err == nil && !mmText.MatchString(m[3]) {
				err = fmt.Errorf("note text %q has a character Mermaid may misread", m[3])
			}
		case mmMessage.MatchString(line):
			m := mmMessage.FindStringSubmatch(line)
			err = use(m[1], m[3])
			if err == nil && !mmText.MatchString(m[4]) {
				err = fmt.Errorf("message text %q has a character Mermaid may misread", m[4])
			}
		default:
			err = fmt.Errorf("not a sequenceDiagram statement")
		}
		if err != nil {
			return fmt.Errorf("line %d %q: %w", n+2, line, err)
		}
		statements++
	}
	if statements == 0 {
		return fmt.Errorf("empty diagram")
	}
	return nil
}

func TestValidateMermaidRejects(t *testing.T) {
	for _, bad := range [][]string{
		{"graph TD"},
		{"sequenceDiagram", "    a->>b: hi"},
		{"sequenceDiagram", "    participant a", "    participant b", "    a->>b: x; y"},
		{"sequenceDiagram", "    participant a", "    Note over a: #1"},
		{"sequenceDiagram", "    participant a", "    a says hi"},
	} {
		if validateMermaid(bad) == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// synthetic builds a history of about n events: clients taking the lock
// in turn and incrementing x, with one in every 500 holders paused after
// its read and resumed 40 holds later to write its stale value, as in a
// pause run without a fence.
func synthetic(n int) Input {
	const clients = 10
	var (
		h               []history.Event
		log             []store.Entry
		now, x, tok, rq int64
	)
	add := func(e history.Event) {
		now += 300_000
		e.Index, e.Time = int64(len(h)), now
		h = append(h, e)
	}
	nextReq := func(c string) string {
		rq++
		return fmt.Sprintf("%s-%d", c, rq)
	}
	// apply records the store's decision, between an invocation and its
	// completion.
	apply := func(req, c, op string, token, value, prev int64) {
		log = append(log, store.Entry{Seq: int64(len(log)), Time: now + 100_000, Req: req, Client: c, Op: op, Key: "x",
			Token: token, Value: value, Prev: prev, Outcome: store.Accepted, MaxToken: tok})
	}
	type pause struct {
		client      string
		token, read int64
		resume      int
	}
	var paused *pause
	for cycle := 0; len(h) < n-20; cycle++ {
		c := fmt.Sprintf("c%d", cycle%clients+1)
		if paused != nil && c == paused.client {
			continue
		}
		tok++
		add(history.Event{Process: c, Type: history.Invoke, F: history.Acquire})
		add(history.Event{Process: c, Type: history.OK, F: history.Acquire, Token: tok})
		req := nextReq(c)
		add(history.Event{Process: c, Type: history.Invoke, F: history.Read, Key: "x", Token: tok, Req: req})
		apply(req, c, "read", tok, x, x)
		add(history.Event{Process: c, Type: history.OK, F: history.Read, Key: "x", Token: tok, Value: history.Int(x), Req: req})
		if paused == nil && cycle%500 == 100 {
			paused = &pause{client: c, token: tok, read: x, resume: cycle + 40}
			add(history.Event{Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: "pause", Targets: []string{c}})
			continue
		}
		req = nextReq(c)
		add(history.Event{Process: c, Type: history.Invoke, F: history.Write, Key: "x", Token: tok, Value: history.Int(x + 1), Req: req})
		apply(req, c, "write", tok, x+1, x)
		x++
		add(history.Event{Process: c, Type: history.OK, F: history.Write, Key: "x", Token: tok, Value: history.Int(x), Req: req})
		add(history.Event{Process: c, Type: history.Invoke, F: history.Release, Token: tok})
		add(history.Event{Process: c, Type: history.OK, F: history.Release, Token: tok})
		if paused != nil && cycle >= paused.resume {
			p := paused
			paused = nil
			add(history.Event{Process: history.Nemesis, Type: history.Info, F: history.Stop, Fault: "pause"})
			req := nextReq(p.client)
			add(history.Event{Process: p.client, Type: history.Invoke, F: history.Write, Key: "x", Token: p.token, Value: history.Int(p.read + 1), Req: req})
			add(history.Event{Process: p.client, Type: history.Info, F: history.LeaseLost, Token: p.token})
			apply(req, p.client, "write", p.token, p.read+1, x)
			x = p.read + 1
			add(history.Event{Process: p.client, Type: history.OK, F: history.Write, Key: "x", Token: p.token, Value: history.Int(x), Req: req})
			add(history.Event{Process: p.client, Type: history.Invoke, F: history.Release, Token: p.token})
			add(history.Event{Process: p.client, Type: history.Fail, F: history.Release, Token: p.token, Error: "lock not held"})
		}
	}
	in := Input{
		Test:    []byte(`{"name":"synthetic-counter-pause-fence-none","run_id":"0","config":{"backend":"synthetic","nemesis":["pause"],"fence":"none","seed":1}}`),
		History: h, Store: log, Key: "x",
	}
	cin := checkers.Input{History: h, Store: log, Key: "x"}
	in.Results = []checkers.Result{checkers.Fence{}.Check(cin), checkers.LostUpdates{}.Check(cin)}
	in.Verdict = checkers.Overall(in.Results)
	return in
}

func TestLargeHistoryStaysSmall(t *testing.T) {
	in := synthetic(100_000)
	if len(in.History) < 99_000 {
		t.Fatalf("synthetic history has %d events", len(in.History))
	}
	for _, r := range in.Results {
		if r.Valid != checkers.Invalid {
			t.Fatalf("synthetic run: %s is %s (%s %s), want invalid", r.Checker, r.Valid, r.Summary, r.Reason)
		}
	}
	dir := t.TempDir()
	if err := Write(dir, in); err != nil {
		t.Fatal(err)
	}
	for name, limit := range map[string]int64{rundir.HTMLFile: 10 << 20, rundir.LinearFile: 64 << 10, rundir.AnomaliesFile: 2 << 20} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes", name, fi.Size())
		if fi.Size() >= limit {
			t.Errorf("%s is %d bytes, want under %d", name, fi.Size(), limit)
		}
	}
	page := readFile(t, dir, rundir.HTMLFile)
	if !strings.Contains(page, `id="overview-aggregated"`) {
		t.Error("the page does not say the overview is aggregated")
	}
	if n := strings.Count(between(t, page, `id="ov-timeline"`, "</svg>"), `<g class="lane"`); n != 10 {
		t.Errorf("overview has %d lanes, want 10", n)
	}
	if lin := readFile(t, dir, rundir.LinearFile); !strings.Contains(lin, "critical sections") || strings.Contains(lin, "<script") {
		t.Error("linear.html should explain why porcupine's page was not drawn")
	}
	for _, b := range mermaidBlocks(readFile(t, dir, rundir.AnomaliesFile)) {
		if err := validateMermaid(b); err != nil {
			t.Errorf("invalid mermaid: %v", err)
		}
	}
}

// BenchmarkWrite measures a report for a real ~25 s run (the target is
// well under 2 s), and for a 100,000-event history.
func BenchmarkWrite(b *testing.B) {
	real, err := Load(filepath.Join("testdata", "invalid"), "x")
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		in   Input
	}{{"real-run", real}, {"100k-events", synthetic(100_000)}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			for b.Loop() {
				if err := Write(dir, bc.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestTokenRanges(t *testing.T) {
	for _, c := range []struct {
		in   []int64
		want string
	}{{nil, ""}, {[]int64{46, 68}, "46, 68"}, {[]int64{46, 47, 48, 49, 52, 53}, "46–49, 52, 53"}, {[]int64{5}, "5"}} {
		if got := tokenRanges(c.in); got != c.want {
			t.Errorf("tokenRanges(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMermaidText(t *testing.T) {
	got := mermaidText(`rejected, stale token 49 < 69; "quoted" #1: ok`)
	if !mmText.MatchString(got) || !strings.Contains(got, "49 below 69") {
		t.Errorf("mermaidText = %q", got)
	}
	if id := mermaidID("end"); id == "end" {
		t.Error("a Mermaid keyword was used as a participant id")
	}
}

func TestSkippedLinearPage(t *testing.T) {
	var buf bytes.Buffer
	an := analyze(Input{})
	if err := executeSkipped(&buf, an, "too many <sections>"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "too many &lt;sections&gt;") {
		t.Errorf("reason not escaped: %s", buf.String())
	}
}

// Drawing never takes the verdict with it. Decoding refuses negative times,
// but a caller of Write may hand them in; once they broke the throughput
// plot. Whatever fails to draw, the page still shows the verdict and says
// what failed.
func TestWriteSurvivesBadInput(t *testing.T) {
	h := []history.Event{
		{Index: 0, Time: -5e9, Process: "c1", Type: history.Invoke, F: history.Acquire},
		{Index: 1, Time: -4e9, Process: "c1", Type: history.OK, F: history.Acquire, Token: 1},
		{Index: 2, Time: 3e9, Process: "c1", Type: history.Invoke, F: history.Read, Key: "x", Req: "c1-1"},
		{Index: 3, Time: -9e9, Process: "c1", Type: history.OK, F: history.Read, Key: "x", Req: "c1-1", Value: history.Int(0)},
	}
	dir := t.TempDir()
	in := Input{History: h, Verdict: checkers.Invalid,
		Results: []checkers.Result{{Checker: "fence", Valid: checkers.Invalid, Summary: "1 stale write accepted"}}}
	err := Write(dir, in)
	if err != nil && (!errors.Is(err, ErrDegraded) || !strings.Contains(err.Error(), "drawing")) {
		t.Fatal(err)
	}
	page := readFile(t, dir, rundir.HTMLFile)
	if !strings.Contains(page, "1 stale write accepted") {
		t.Error("the page lost the verdict")
	}
	if strings.Contains(page, "drawing") && !strings.Contains(page, "the page shows the verdict without the timeline") {
		t.Error("a drawing failure is not explained")
	}
	// Whatever Write drew, it drew all three files.
	for _, f := range []string{rundir.LinearFile, rundir.AnomaliesFile} {
		readFile(t, dir, f)
	}
	// A forced failure shows as the note.
	err = recovered("x.html", func() error { var m map[string]int; m["a"]++; return nil })
	if err == nil || !strings.Contains(err.Error(), "drawing x.html failed") {
		t.Errorf("a panic while drawing gave %v", err)
	}
}

// An incident's headline names the fault and the newer token, and a fault
// window ends at one time on every page: the story's resume, the
// timeline's tooltip and the anomalies page agree.
func TestHeadlineAndFaultEnd(t *testing.T) {
	dir := writeRun(t, "invalid")
	md, page := readFile(t, dir, rundir.AnomaliesFile), readFile(t, dir, rundir.HTMLFile)
	headline := "c3 wrote 46 with stale token 46 after a 4.0 s pause; c1 already held token 68: accepted at 9.684 s"
	if !strings.Contains(md, "## Incident 1: "+headline) || !strings.Contains(page, headline) {
		t.Errorf("the headline %q is missing", headline)
	}
	if !strings.Contains(md, "**9.663 s** the nemesis resumed c3") || !strings.Contains(page, "pause c3 from 5.663 s for 4.0 s, healed at 9.663 s") {
		t.Error("the first pause does not end at 9.663 s on both pages")
	}
	if strings.Contains(page, "healed at 9.686 s") {
		t.Error("the tooltip still ends the pause when its heal was recorded")
	}
}

// Every count key the checkers report is explained on the page.
func TestCountKeysExplained(t *testing.T) {
	for _, run := range []string{"invalid", "valid"} {
		in, err := Load(filepath.Join("testdata", run), "x")
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range checkers.All(time.Minute) {
			for k := range ch.Check(checkers.Input{History: in.History, Store: in.Store, Key: "x"}).Counts {
				if countMeanings[k] == "" {
					t.Errorf("%s's count %q has no meaning in countMeanings", ch.Name(), k)
				}
			}
		}
	}
	page := readFile(t, writeRun(t, "invalid"), rundir.HTMLFile)
	if !strings.Contains(page, `<span title="writes the store accepted although it had already seen a newer token">stale_accepted 2</span>`) ||
		!strings.Contains(page, `<dt>stale_accepted</dt>`) {
		t.Error("the checkers table does not explain its counts")
	}
	if !strings.Contains(page, "<b>t46</b> on a bar is the holding") {
		t.Error("the timeline's labels are not explained")
	}
}

// After a heal the service's recovery is drawn up to its healthy mark, told
// in the fault's tooltip and listed in the table of faults; a failed wait
// says why. The same history without healthy events (an older lockbench's)
// draws no recovery.
func TestHealthyAfterHeal(t *testing.T) {
	nem := func(i, at int64, f string, typ history.Type, err string) history.Event {
		return history.Event{Index: i, Time: at, Process: history.Nemesis, Type: typ, F: f, Fault: "kill", Targets: []string{"z2", "z3"}, Error: err}
	}
	h := []history.Event{
		{Index: 0, Time: 1e8, Process: "c1", Type: history.Invoke, F: history.Acquire},
		{Index: 1, Time: 2e8, Process: "c1", Type: history.OK, F: history.Acquire, Token: 1},
		nem(2, 1e9, history.Start, history.Info, ""),
		nem(3, 12e8, history.Stop, history.Invoke, ""),
		nem(4, 13e8, history.Stop, history.Info, ""),
		nem(5, 42e8, history.Healthy, history.Info, ""),
		nem(6, 5e9, history.Start, history.Info, ""),
		nem(7, 52e8, history.Stop, history.Invoke, ""),
		nem(8, 53e8, history.Stop, history.Info, ""),
		nem(9, 9e9, history.Healthy, history.Fail, "zookeeper not healthy again: z1 not ready after 1m0s"),
		{Index: 10, Time: 95e8, Process: "c1", Type: history.Invoke, F: history.Release, Token: 1},
		{Index: 11, Time: 96e8, Process: "c1", Type: history.OK, F: history.Release, Token: 1},
	}
	effects := []checkers.FaultEffect{
		{Event: 2, Fault: "kill", Start: 1e9, End: 13e8, Targets: []string{"z2", "z3"}, Healthy: 29e8},
		{Event: 6, Fault: "kill", Start: 5e9, End: 53e8, Targets: []string{"z2", "z3"}, Unhealthy: "zookeeper not healthy again: z1 not ready after 1m0s"},
	}
	draw := func(h []history.Event, effects []checkers.FaultEffect) string {
		dir := t.TempDir()
		in := Input{History: h, Verdict: checkers.Valid, Key: "x", Results: []checkers.Result{{Checker: "exclusion", Valid: checkers.Valid, Faults: effects}}}
		if err := Write(dir, in); err != nil {
			t.Fatal(err)
		}
		return readFile(t, dir, rundir.HTMLFile)
	}
	page := draw(h, effects)
	overview := between(t, page, `id="ov-timeline"`, "</svg>")
	if n := strings.Count(overview, `class="fault-recovery"`); n != 2 {
		t.Errorf("overview draws %d recoveries, want 2", n)
	}
	for _, want := range []string{
		"kill z2,z3 from 1.000 s for 0.2 s, healed at 1.200 s; the service healthy again at 4.200 s, 3.0 s after the heal",
		"the service was not healthy again by 9.000 s: zookeeper not healthy again: z1 not ready after 1m0s",
		">healthy</text>", ">not healthy</text>",
	} {
		if !strings.Contains(overview, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	table := between(t, page, `<table id="fault-efficacy">`, "</table>")
	for _, want := range []string{"<td>2.9 s</td>", "<td>not healthy again: zookeeper not healthy again: z1 not ready after 1m0s</td>"} {
		if !strings.Contains(table, want) {
			t.Errorf("fault table lacks %q", want)
		}
	}

	old := slices.DeleteFunc(slices.Clone(h), func(e history.Event) bool { return e.F == history.Healthy })
	for i := range old {
		old[i].Index = int64(i)
	}
	plain := []checkers.FaultEffect{{Event: 2, Fault: "kill", Start: 1e9, End: 13e8}, {Event: 5, Fault: "kill", Start: 5e9, End: 53e8}}
	page = draw(old, plain)
	if strings.Contains(page, `class="fault-recovery"`) || strings.Contains(page, "healthy again") {
		t.Error("a history without healthy events draws a recovery")
	}
	if n := strings.Count(between(t, page, `<table id="fault-efficacy">`, "</table>"), "<td>not awaited</td>"); n != 2 {
		t.Errorf("%d faults not awaited in the table, want 2", n)
	}
}
