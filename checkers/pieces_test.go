package checkers

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/lockbench/lockbench/checkers/simulate"
)

// wholeVerdict is porcupine's verdict on all of ss at once, which
// checkSections must give.
func wholeVerdict(ss []Section) porcupine.CheckResult {
	res, _ := porcupine.CheckOperationsVerbose(CounterModel(), Operations(ss), patientTimeout)
	return res
}

// samePieceVerdict fails t if checkSections and porcupine on the whole
// history disagree.
func samePieceVerdict(t *testing.T, name string, ss []Section) {
	t.Helper()
	want := wholeVerdict(ss)
	got, a := checkSections(ss, patientTimeout, nil, nil)
	if want == porcupine.Unknown || got == porcupine.Unknown {
		t.Logf("%s: undecided (%s, %s)", name, want, got)
		return
	}
	if got != want {
		t.Errorf("%s: %s in pieces, %s whole: %+v\n%+v", name, got, want, a, ss)
	}
	if got == porcupine.Illegal && a.Message == "" {
		t.Errorf("%s: illegal without an explanation", name)
	}
}

// section is a section of client c for the hand-made histories.
func section(c string, call, ret, read, write int64, o Outcome) Section {
	return Section{Client: c, Read: read, Write: write, Outcome: o, Call: call, Return: ret}
}

// serialSections are n sections of c1, one after another, counting from v.
func serialSections(n int, t0, v int64) []Section {
	var ss []Section
	for i := range int64(n) {
		ss = append(ss, section("c1", t0+10*i, t0+10*i+5, v+i, v+i+1, WriteAccepted))
	}
	return ss
}

func TestPiecesMatchPorcupine(t *testing.T) {
	const end = 1 << 40 // an unknown write's return
	cases := map[string][]Section{
		"empty": nil,
		// A write that returns before it was called cannot be placed.
		"backwards": {section("c1", 10, 5, 0, 1, WriteAccepted)},
		// c2's write times out; c3 reads 1 and writes nothing; c2's write
		// lands after c3's read, which only an order with c2's section
		// after c3's explains, and c4 reads 2.
		"late landing": {
			section("c1", 0, 5, 0, 1, WriteAccepted), section("c2", 10, end, 1, 2, WriteUnknown),
			section("c3", 20, 25, 1, 0, NoWrite), section("c4", 30, 35, 2, 3, WriteAccepted),
		},
		"late landing, read lost": {
			section("c1", 0, 5, 0, 1, WriteAccepted), section("c2", 10, end, 1, 2, WriteUnknown),
			section("c3", 20, 25, 1, 0, NoWrite), section("c4", 30, 35, 1, 2, WriteAccepted),
		},
		"late landing, read from nowhere": {
			section("c1", 0, 5, 0, 1, WriteAccepted), section("c2", 10, end, 1, 2, WriteUnknown),
			section("c3", 20, 25, 1, 0, NoWrite), section("c4", 30, 35, 7, 8, WriteAccepted),
		},
		// An unknown write that read a value the counter returns to much
		// later stays open until then.
		"unknown write revisited": append(append([]Section{section("c9", 1, end, 0, 1, WriteUnknown)},
			serialSections(5, 10, 0)...), section("c8", 100, 105, 5, 0, WriteAccepted), section("c7", 110, 115, 1, 2, WriteAccepted)),
		// A section spanning a hundred others, which reads the value from
		// before them or from nowhere: too large to enumerate.
		"long reader":            append(serialSections(100, 10, 0), section("c9", 1, 2000, 0, 0, NoWrite)),
		"long reader of nothing": append(serialSections(100, 10, 0), section("c9", 1, 2000, 1000, 0, NoWrite)),
		"long stale writer":      append(serialSections(100, 10, 0), section("c9", 1, 2000, 0, 1, WriteAccepted)),
		// The same with an unknown write among them: the rest goes to
		// porcupine whole.
		"long reader, unknown write": append(serialSections(100, 10, 0),
			section("c8", 505, end, 50, 51, WriteUnknown), section("c9", 1, 2000, 0, 0, NoWrite)),
		"long reader of nothing, unknown write": append(serialSections(100, 10, 0),
			section("c8", 505, end, 50, 51, WriteUnknown), section("c9", 1, 2000, 1000, 0, NoWrite)),
		"long reader, unknown write, read from nowhere": append(serialSections(100, 10, 0),
			section("c8", 505, end, 50, 51, WriteUnknown), section("c9", 1, 2000, 0, 0, NoWrite),
			section("c7", 3000, 3005, 7777, 0, NoWrite)),
		// The counter is 0 or 1 when the long reader starts: porcupine
		// checks its piece from each.
		"long reader after an unknown write": append(serialSections(100, 10, 1),
			section("c8", 1, end, 0, 1, WriteUnknown), section("c9", 5, 2000, 1, 0, NoWrite)),
		// As many unknown writes at once: too large to enumerate, and
		// unknown, so the rest goes to porcupine whole.
		"many unknown writes": func() []Section {
			var ss []Section
			for c := range 70 {
				ss = append(ss, section(fmt.Sprintf("c%d", c+1), int64(c), end, 0, 1, WriteUnknown))
			}
			return append(ss, serialSections(3, 100, 0)...)
		}(),
	}
	for _, n := range []int{2, 5, 9} {
		cases[fmt.Sprintf("concurrent %d", n)] = Sections(concurrentHistory(n), "x")
	}
	for name, ss := range cases {
		samePieceVerdict(t, name, ss)
	}

	for _, spec := range []simulate.Spec{
		{Events: 1e4, Clients: 5}, {Events: 1e4, Clients: 50, Stale: true},
		{Events: 3e4, Clients: 5, Stale: true}, {Events: 1e4, Clients: 5, Set: true, Stale: true},
	} {
		in := generateRun(spec)
		if spec.Set {
			in = setAsCounter(in)
		}
		samePieceVerdict(t, spec.String(), Sections(in.History, in.Key))
	}

	bases := goldenInputs(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range 1000 {
		prog := make([]byte, rng.IntN(64))
		for i := range prog {
			prog[i] = byte(rng.IntN(256))
		}
		fc := buildCase(bases, prog)
		samePieceVerdict(t, fmt.Sprintf("program %d %v", k, prog), Sections(fc.in.History, fc.in.Key))
	}
}

// setAsCounter is the history SetView hands its checker.
func setAsCounter(in Input) Input {
	var got Input
	SetView{checkerFunc(func(in Input) Result { got = in; return Result{} })}.Check(in)
	return got
}

type checkerFunc func(Input) Result

func (checkerFunc) Name() string            { return "func" }
func (f checkerFunc) Check(in Input) Result { return f(in) }

func goldenInputs(t *testing.T) []Input {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*", "history.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("golden histories: %v", err)
	}
	var out []Input
	for _, p := range paths {
		out = append(out, load(t, filepath.Base(filepath.Dir(p))))
	}
	return out
}
