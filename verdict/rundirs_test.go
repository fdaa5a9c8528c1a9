package verdict

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
)

// goldenRun copies the run directory testdata/name into a directory of
// its own (Check rewrites files), dropping the files named in without.
func goldenRun(t *testing.T, name string, without ...string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		if slices.Contains(without, e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// verdicts is what a check decided, checker by checker, and overall under
// the key "".
func verdicts(t *testing.T, dir string) (map[string]checkers.Verdict, *rundir.Results) {
	t.Helper()
	rep, err := Check(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := rundir.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stored.Notes, rep.Notes) || stored.Verdict != rep.Verdict {
		t.Fatalf("results.json says %s %q, the check %s %q", stored.Verdict, stored.Notes, rep.Verdict, rep.Notes)
	}
	got := map[string]checkers.Verdict{"": rep.Verdict}
	for _, r := range rep.Checkers {
		got[r.Checker] = r.Valid
	}
	return got, rep
}

func wantVerdicts(t *testing.T, got map[string]checkers.Verdict, want map[string]checkers.Verdict) {
	t.Helper()
	for c, w := range want {
		if got[c] != w {
			name := c
			if name == "" {
				name = "overall"
			}
			t.Errorf("%s: %s, want %s", name, got[c], w)
		}
	}
}

// result is the named checker's result in rep.
func result(t *testing.T, rep *rundir.Results, checker string) checkers.Result {
	t.Helper()
	for _, r := range rep.Checkers {
		if r.Checker == checker {
			return r
		}
	}
	t.Fatalf("no %s result", checker)
	return checkers.Result{}
}

// A verdict per checker: "v" valid, "i" invalid, "u" unknown, in the order
// linearizable, fence, lost-updates, exclusion, progress, then overall.
func verdictsOf(s string) map[string]checkers.Verdict {
	names := []string{"linearizable", "fence", "lost-updates", "exclusion", "progress", ""}
	of := map[byte]checkers.Verdict{'v': checkers.Valid, 'i': checkers.Invalid, 'u': checkers.Unknown}
	out := map[string]checkers.Verdict{}
	for i, n := range names {
		out[n] = of[s[i]]
	}
	return out
}

// sameBut fails unless history a is history b with the events that drop
// picks left out of a (indexes aside): the twins differ in nothing else.
func sameBut(t *testing.T, a, b string, drop func(history.Event) bool) {
	t.Helper()
	read := func(name string) []history.Event {
		events, err := history.DecodeFile(filepath.Join("testdata", name, rundir.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		return events
	}
	ea, eb := slices.DeleteFunc(read(a), drop), read(b)
	if len(ea) == len(read(a)) {
		t.Fatalf("%s has no event to drop: not a twin of %s", a, b)
	}
	if !slices.EqualFunc(ea, eb, func(x, y history.Event) bool {
		x.Index, y.Index = 0, 0
		return slices.Equal(x.Targets, y.Targets) && x.Time == y.Time && x.Process == y.Process && x.Type == y.Type &&
			x.F == y.F && x.Req == y.Req && x.Fault == y.Fault && x.Token == y.Token
	}) {
		t.Fatalf("%s and %s differ in more than the dropped events", a, b)
	}
}

// A run whose harness died (test.json has no end) during kill-client: the
// killed client c1's last event is at 0.315 s, and c2's stale write at
// 2.505 s overwrites c3's acknowledged increment. The kill's immediate heal
// does not bring c1 back, so its silence does not hold the horizon at
// 0.315 s, where the lost update would be left out. The twin is the same
// run without that write.
func TestHorizonPassesAKilledClient(t *testing.T) {
	sameBut(t, "kill-client-lost", "kill-client-kept", func(e history.Event) bool { return e.Req == "c2-2" })
	for _, c := range []struct {
		dir  string
		want string
	}{
		{"kill-client-lost", "iiivvi"},
		{"kill-client-kept", "vvvvvv"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			got, rep := verdicts(t, goldenRun(t, c.dir))
			wantVerdicts(t, got, verdictsOf(c.want))
			if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "judged up to 2.730 s") || !strings.Contains(rep.Notes[0], "not waiting for c1:") {
				t.Errorf("notes %q, want the horizon at c2's last event, past killed c1", rep.Notes)
			}
			if got := result(t, rep, "lost-updates").Counts["lost_acknowledged"]; got != map[string]int64{"kill-client-lost": 1}[c.dir] {
				t.Errorf("%d acknowledged increments lost", got)
			}
		})
	}
}

// pause freezes c1 at 0.35 s and is never healed; kill-client kills c3 at
// 2.85 s and heals at once. That heal is not the pause's: c1 is still
// frozen when the record ends, and the lost update at 2.505 s is judged.
// The twin heals the pause at 2.9 s: c1 runs again, its silence since
// 0.315 s is unexplained, and the run is judged only up to there.
func TestHorizonHealEndsOnlyItsOwnFault(t *testing.T) {
	sameBut(t, "pause-healed-kill-client-lost", "pause-kill-client-lost", func(e history.Event) bool {
		return e.F == history.Stop && e.Fault == "pause"
	})
	for _, c := range []struct {
		dir, want, horizon, waived string
	}{
		{"pause-kill-client-lost", "iiivvi", "2.730 s", "c1, c3"},
		{"pause-healed-kill-client-lost", "vvvvvv", "0.315 s", "c3"},
	} {
		t.Run(c.dir, func(t *testing.T) {
			got, rep := verdicts(t, goldenRun(t, c.dir))
			wantVerdicts(t, got, verdictsOf(c.want))
			if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "judged up to "+c.horizon) || !strings.Contains(rep.Notes[0], "not waiting for "+c.waived+":") {
				t.Errorf("notes %q, want the horizon at %s, not waiting for %s", rep.Notes, c.horizon, c.waived)
			}
		})
	}
}

// A run without store.log (its harness was killed before it copied the
// log out) is judged on its history; the checkers of the store's
// decisions are unknown, and say how to get the log. The twin is the same
// directory with its store.log.
func TestCheckWithoutStoreLog(t *testing.T) {
	for _, f := range []string{rundir.HistoryFile, rundir.TestFile} {
		a, errA := os.ReadFile(filepath.Join("testdata", "no-store-log", f))
		b, errB := os.ReadFile(filepath.Join("testdata", "kill-client-kept", f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("no-store-log and kill-client-kept differ in %s (%v, %v)", f, errA, errB)
		}
	}
	if _, err := os.Stat(filepath.Join("testdata", "no-store-log", rundir.StoreFile)); err == nil {
		t.Fatal("no-store-log has a store log")
	}
	got, rep := verdicts(t, goldenRun(t, "no-store-log"))
	wantVerdicts(t, got, verdictsOf("vuuvvu"))
	for _, c := range []string{"fence", "lost-updates"} {
		if r := result(t, rep, c); r.Reason != "no store.log: if the harness was killed, `lockbench clean --run 5e1f0a29` saves it" {
			t.Errorf("%s: reason %q", c, r.Reason)
		}
	}
	got, _ = verdicts(t, goldenRun(t, "kill-client-kept"))
	wantVerdicts(t, got, verdictsOf("vvvvvv"))
}

// A run directory without its history is refused as bad input, never
// judged; the twin with its history is judged valid above.
func TestCheckRefusesARunWithoutHistory(t *testing.T) {
	_, err := Check(goldenRun(t, "kill-client-kept", rundir.HistoryFile), testOptions)
	if !IsBadInput(err) || !strings.Contains(err.Error(), "has no history.jsonl") {
		t.Fatalf("a run without history: %v, want bad input naming history.jsonl", err)
	}
	if _, err := Check(goldenRun(t, "kill-client-kept"), testOptions); err != nil {
		t.Fatalf("the twin with its history: %v", err)
	}
}

// A store log whose last line a crash cut short is read as a history cut
// short is: up to that line, with a note. Here the line lost is c3's
// acknowledged write, so the ledger finds it acknowledged and not in the
// log, and lost-updates cannot judge the run. The twin is the same
// directory with the file whole.
func TestCheckToleratesACutShortStoreLog(t *testing.T) {
	cut, err := os.ReadFile(filepath.Join("testdata", "store-log-cut", rundir.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	whole, err := os.ReadFile(filepath.Join("testdata", "kill-client-kept", rundir.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(whole, cut) || bytes.HasSuffix(cut, []byte("\n")) || bytes.Count(whole[len(cut):], []byte("\n")) != 1 {
		t.Fatal("store-log-cut's store.log is not kill-client-kept's cut in its last line")
	}
	dir := goldenRun(t, "store-log-cut")
	got, rep := verdicts(t, dir)
	wantVerdicts(t, got, verdictsOf("vvuvvu"))
	if want := "store.log: store log ends in an incomplete line (line 20: "; len(rep.Notes) != 1 || !strings.HasPrefix(rep.Notes[0], want) {
		t.Errorf("notes %q, want one starting %q", rep.Notes, want)
	}
	if r := result(t, rep, "lost-updates"); !strings.Contains(r.Reason, `write "c3-6" by c3 (event 83) was acknowledged but the store log has no such request`) {
		t.Errorf("lost-updates: reason %q", r.Reason)
	}

	// The history cut short the same way is noted the same way.
	hist := filepath.Join(dir, rundir.HistoryFile)
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hist, data[:len(data)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	_, rep = verdicts(t, dir)
	if want := "history.jsonl: history ends in an incomplete line (line 86: "; len(rep.Notes) != 2 || !strings.HasPrefix(rep.Notes[0], want) {
		t.Errorf("notes %q, want the history's first, starting %q", rep.Notes, want)
	}

	dir = goldenRun(t, "store-log-cut")
	if err := os.WriteFile(filepath.Join(dir, rundir.StoreFile), whole, 0o644); err != nil {
		t.Fatal(err)
	}
	got, rep = verdicts(t, dir)
	wantVerdicts(t, got, verdictsOf("vvvvvv"))
	if len(rep.Notes) != 0 {
		t.Errorf("notes %q for a whole store log", rep.Notes)
	}
}
