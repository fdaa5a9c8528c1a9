package checkers

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"
)

// fuzzTimeout bounds the linearizability search as a real check would;
// generated runs are small, so it only runs out on an overloaded machine.
const fuzzTimeout = 200 * time.Millisecond

// patientTimeout settles a verdict that fuzzTimeout left open, for the
// cases where the generator promises one: a timeout is not a verdict, so it
// can neither pass nor fail the promise.
const patientTimeout = 30 * time.Second

// The per-checker targets take a program for the run generator in
// generate_fuzz_test.go and hold one checker to the properties in judge and
// to the generator's promises.

func FuzzLinearizable(f *testing.F) {
	fuzzChecker(f, Linearizable{Timeout: fuzzTimeout})
}

func FuzzFence(f *testing.F) {
	fuzzChecker(f, Fence{})
}

func FuzzLostUpdates(f *testing.F) {
	fuzzChecker(f, LostUpdates{})
}

func FuzzExclusion(f *testing.F) {
	fuzzChecker(f, Exclusion{})
}

// FuzzLinearizablePieces holds the piecewise search behind Linearizable to
// the verdict porcupine gives on the whole history.
func FuzzLinearizablePieces(f *testing.F) {
	bases := addSeeds(f)
	f.Fuzz(func(t *testing.T, prog []byte) {
		fc := buildCase(bases, prog)
		samePieceVerdict(t, "the run", Sections(fc.in.History, fc.in.Key))
	})
}

func fuzzChecker(f *testing.F, c Checker) {
	bases := addSeeds(f)
	f.Fuzz(func(t *testing.T, prog []byte) {
		fc := buildCase(bases, prog)
		r := judge(t, fc, c)
		if want, ok := promised(fc, c.Name()); ok {
			if r = settle(fc, r); r.Valid != want {
				t.Fatalf("%s = %s, want %s for a %s: %s %s %+v\n%s",
					r.Checker, r.Valid, want, fc.kind(), r.Summary, r.Reason, r.Anomalies, dump(fc.in))
			}
		}
		// The read-from accounting must agree with the simulation's own.
		if c.Name() == (LostUpdates{}).Name() && fc.lost != nil {
			for k, want := range fc.lost {
				if got := r.Counts[k]; got != want {
					t.Fatalf("lost-updates count %s = %d, want %d for a %s: %s %+v\n%s", k, got, want, fc.kind(), r.Summary, r.Anomalies, dump(fc.in))
				}
			}
		}
	})
}

// FuzzOverall checks the checkers together: the combined verdict follows
// from theirs, and the generator's promises hold for the run as a whole.
func FuzzOverall(f *testing.F) {
	bases := addSeeds(f)
	f.Fuzz(func(t *testing.T, prog []byte) {
		fc := buildCase(bases, prog)
		var rs []Result
		for _, c := range All(fuzzTimeout) {
			rs = append(rs, judge(t, fc, c))
		}
		v := Overall(rs)
		var valid, invalid, unknown bool
		for _, r := range rs {
			valid = valid || r.Valid == Valid
			invalid = invalid || r.Valid == Invalid
			unknown = unknown || r.Valid == Unknown
		}
		want := Unknown
		switch {
		case invalid:
			want = Invalid
		case valid && !unknown:
			want = Valid
		}
		if v != want {
			t.Fatalf("Overall = %s, want %s from %+v", v, want, rs)
		}

		// Settled, every promised verdict must hold, and the run as a whole
		// must follow: a stale write fails it, a clean run cannot fail it
		// (other checkers, like progress, may still leave it unknown).
		for i, r := range rs {
			rs[i] = settle(fc, r)
			if want, ok := promised(fc, r.Checker); ok && rs[i].Valid != want {
				t.Fatalf("%s = %s, want %s for a %s: %+v\n%s", r.Checker, rs[i].Valid, want, fc.kind(), rs[i], dump(fc.in))
			}
		}
		v = Overall(rs)
		if (fc.stale && v != Invalid) || (fc.clean && v == Invalid) {
			t.Fatalf("overall %s for a %s: %+v\n%s", v, fc.kind(), rs, dump(fc.in))
		}
	})
}

// addSeeds reads the golden runs, which programs can continue, and seeds
// the target with each of them, alone and continued with a stale write, and
// with programs that start from nothing.
func addSeeds(f *testing.F) []Input {
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "history.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	if len(paths) == 0 {
		f.Fatal("no golden histories in testdata")
	}
	var bases []Input
	for _, p := range paths {
		h, err := history.DecodeFile(p)
		if err != nil {
			f.Fatal(err)
		}
		l, err := store.ReadLogFile(filepath.Join(filepath.Dir(p), "store.log"))
		if err != nil {
			f.Fatal(err)
		}
		k := byte(len(bases))
		bases = append(bases, Input{History: h, Store: l})
		f.Add([]byte{genBase, k})
		f.Add([]byte{genBase | genStale, k, 3, 2, 1, 5, 0, 7})
	}
	for _, prog := range seedPrograms {
		f.Add(prog)
	}
	for _, prog := range misrecordedSeeds {
		f.Add(misrecordedProgram(prog))
	}
	return bases
}

// misrecordedSeeds are the clean seed programs that the seeds also run
// with a write's value misrecorded.
var misrecordedSeeds = seedPrograms[:4]

// A clean run with one write's value misrecorded in its history is judged
// unknown by the checkers that read values, and the same run recorded
// right is valid: misrecordedProgram reaches the mode it is for.
func TestGeneratedMisrecordedWrite(t *testing.T) {
	for _, prog := range misrecordedSeeds {
		right, wrong := buildCase(nil, prog), buildCase(nil, misrecordedProgram(prog))
		if !right.clean || right.misrecorded || !wrong.clean || !wrong.misrecorded {
			t.Fatalf("program %v: clean %v misrecorded %v; misrecorded: clean %v misrecorded %v",
				prog, right.clean, right.misrecorded, wrong.clean, wrong.misrecorded)
		}
		for _, c := range []Checker{Linearizable{}, LostUpdates{}} {
			if r := c.Check(right.in); r.Valid != Valid {
				t.Errorf("%s = %s (%s) recorded right, want valid", r.Checker, r.Valid, r.Reason)
			}
			if r := c.Check(wrong.in); r.Valid != Unknown || !strings.Contains(r.Reason, "but the store log has it store") {
				t.Errorf("%s = %s (%s) misrecorded, want unknown naming the write\n%s", r.Checker, r.Valid, r.Reason, dump(wrong.in))
			}
		}
	}
}

// seedPrograms start the fuzzer off in each mode the generator has.
var seedPrograms = [][]byte{
	{genClean, 8, 2},
	{genClean | genFenceAll, 11, 3, 1, 5, 2, 4, 9, 0, 6, 3, 7, 1, 2, 0, 4, 8, 1},
	{genClean | genOtherKey | genFenceWrites, 10, 1, 3, 3, 7, 7, 5, 1, 0, 8, 9, 2, 6},
	{genClean | genAllKeys, 6, 2, 0, 1, 6, 7, 9, 8, 4, 4, 2},
	{genStale, 5, 1, 2},
	{genStale | genFenceWrites, 7, 3, 4, 1, 1, 2, 3, 5, 8, 13, 21},
	{genStale | genClean | genFenceAll, 3, 2, 0, 1, 1, 0, 3, 2},
	{0, 11, 3, 3, 7, 3, 2, 3, 9, 3, 3, 3, 1, 3, 200, 3, 3},
	{genNoTokens | genFenceAll, 9, 2, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5},
	{genOtherKey, 11, 3, 9, 9, 9, 8, 8, 8, 7, 7, 7, 3, 3, 3},
}

// promised is the verdict the generator's promise fixes for a checker, if
// any; the promises are about safety, so other checkers get none. A stale write in a run with no base also breaks linearizability and
// loses an acknowledged increment, but a base run may already have made
// those checkers unknown, so then only fence is held to it.
func promised(fc fuzzCase, name string) (Verdict, bool) {
	switch name {
	case (Linearizable{}).Name(), (Fence{}).Name(), (LostUpdates{}).Name():
	case (Exclusion{}).Name():
		// One holder at a time, each releasing before the next is
		// granted: exclusion holds. A stale write says nothing of it.
		if fc.clean {
			return Valid, true
		}
		return "", false
	default:
		return "", false
	}
	switch {
	case fc.clean && fc.misrecorded && name != (Fence{}).Name():
		return Unknown, true
	case fc.clean:
		if name == (Fence{}).Name() && fc.grants == 0 {
			return Skipped, true
		}
		return Valid, true
	case fc.stale && (name == (Fence{}).Name() || fc.fresh):
		return Invalid, true
	}
	return "", false
}

func (fc fuzzCase) kind() string {
	switch {
	case fc.clean && fc.misrecorded:
		return "clean serial run with a write's value misrecorded"
	case fc.clean:
		return "clean serial run"
	case fc.stale && fc.fresh:
		return "run with a stale write"
	case fc.stale:
		return "base run continued with a stale write"
	}
	return "run"
}

// judge runs c on the case twice and holds the result to what every
// verdict owes: c leaves its input alone and answers the same each time
// (a timed-out search aside, which depends on the machine), the verdict is
// one of the four, an invalid verdict shows evidence, and all evidence
// points at events and store entries that exist.
func judge(t *testing.T, fc fuzzCase, c Checker) Result {
	t.Helper()
	in := cloneInput(fc.in)
	r := c.Check(in)
	if !reflect.DeepEqual(in, fc.in) {
		t.Fatalf("%s changed its input", c.Name())
	}
	if again := c.Check(cloneInput(fc.in)); !timedOut(r) && !timedOut(again) && !reflect.DeepEqual(r, again) {
		t.Fatalf("%s answered differently on the same input:\n%+v\n%+v", c.Name(), r, again)
	}

	if r.Checker != c.Name() {
		t.Errorf("result of %s names checker %q", c.Name(), r.Checker)
	}
	switch r.Valid {
	case Valid, Invalid, Unknown, Skipped:
	default:
		t.Fatalf("%s verdict %q", r.Checker, r.Valid)
	}
	if (r.Valid == Unknown || r.Valid == Skipped) != (r.Reason != "") {
		t.Errorf("%s is %s with reason %q", r.Checker, r.Valid, r.Reason)
	}
	if r.Summary == "" || strings.Contains(r.Summary, "\n") {
		t.Errorf("%s summary %q is not one line", r.Checker, r.Summary)
	}
	if r.Valid == Invalid && len(r.Anomalies) == 0 {
		t.Errorf("%s is invalid without an anomaly: %s", r.Checker, r.Summary)
	}
	if len(r.Anomalies) > maxAnomalies {
		t.Errorf("%s kept %d anomalies", r.Checker, len(r.Anomalies))
	}
	indexes, seqs := map[int64]bool{}, map[int64]bool{}
	for _, e := range fc.in.History {
		indexes[e.Index] = true
	}
	for _, e := range fc.in.Store {
		seqs[e.Seq] = true
	}
	for _, a := range r.Anomalies {
		if a.Kind == "" || a.Message == "" {
			t.Errorf("%s anomaly without kind or message: %+v", r.Checker, a)
		}
		for _, i := range a.Events {
			if !indexes[i] {
				t.Errorf("%s anomaly %s names event %d, which is not in the history", r.Checker, a.Kind, i)
			}
		}
		for _, s := range a.StoreSeqs {
			if !seqs[s] {
				t.Errorf("%s anomaly %s names store seq %d, which is not in the log", r.Checker, a.Kind, s)
			}
		}
	}
	if t.Failed() {
		t.Fatalf("on:\n%s", dump(fc.in))
	}
	return r
}

func timedOut(r Result) bool {
	return r.Checker == (Linearizable{}).Name() && r.Valid == Unknown
}

// settle reruns a timed-out linearizability check without the hurry.
func settle(fc fuzzCase, r Result) Result {
	if !timedOut(r) {
		return r
	}
	return Linearizable{Timeout: patientTimeout}.Check(cloneInput(fc.in))
}

// cloneInput copies in deeply enough that a checker writing to its input
// would show.
func cloneInput(in Input) Input {
	out := Input{Key: in.Key, Lease: in.Lease, Store: slices.Clone(in.Store)}
	if in.History != nil {
		out.History = make([]history.Event, len(in.History))
	}
	for i, e := range in.History {
		if e.Value != nil {
			e.Value = history.Int(*e.Value)
		}
		e.Targets = slices.Clone(e.Targets)
		e.Set = slices.Clone(e.Set)
		out.History[i] = e
	}
	for i := range out.Store {
		out.Store[i].Set = slices.Clone(out.Store[i].Set)
	}
	return out
}

// dump shows a failing run in the files' own formats, for a golden test.
func dump(in Input) string {
	var b strings.Builder
	b.WriteString("key " + in.Key + "\nhistory.jsonl:\n")
	for _, e := range in.History {
		line, _ := json.Marshal(e)
		b.Write(append(line, '\n'))
	}
	b.WriteString("store.log:\n")
	for _, e := range in.Store {
		line, _ := json.Marshal(e)
		b.Write(append(line, '\n'))
	}
	return b.String()
}
