package workloads

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseWork(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    Work
		longest time.Duration
	}{
		{"uniform:0-200ms", Work{Max: 200 * time.Millisecond}, 200 * time.Millisecond},
		{UniformWork(2 * time.Second), Work{Max: 2 * time.Second}, 2 * time.Second},
		{"uniform:100ms-300ms", Work{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}, 300 * time.Millisecond},
		{"fixed:3s", Work{Min: 3 * time.Second, Max: 3 * time.Second}, 3 * time.Second},
		{"tail:0-100ms,1/4,1500ms", Work{Max: 100 * time.Millisecond, Every: 4, Long: 1500 * time.Millisecond}, 1500 * time.Millisecond},
	} {
		w, err := ParseWork(c.in)
		if err != nil || w != c.want || w.Longest() != c.longest {
			t.Errorf("%s: %+v (longest %s), %v; want %+v (longest %s)", c.in, w, w.Longest(), err, c.want, c.longest)
		}
	}
	for _, bad := range []string{"", "200ms", "gauss:1s", "uniform:200ms", "uniform:300ms-100ms", "uniform:0--1s",
		"fixed:-1s", "fixed:soon", "tail:0-100ms,1/1,1s", "tail:0-100ms,4,1s", "tail:0-100ms,1/4"} {
		if _, err := ParseWork(bad); err == nil || !strings.Contains(err.Error(), "--work") {
			t.Errorf("%q: %v, want an error naming --work", bad, err)
		}
	}
}

// TestWorkDraws: every draw lies in the distribution, and a tail of 1 in 4
// comes out about a quarter of the time, from the seed alone.
func TestWorkDraws(t *testing.T) {
	w, err := ParseWork("tail:10ms-20ms,1/4,1s")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 0))
	long := 0
	const n = 4000
	for range n {
		switch d := w.Draw(r); {
		case d == time.Second:
			long++
		case d < 10*time.Millisecond || d > 20*time.Millisecond:
			t.Fatalf("draw %s outside 10ms-20ms", d)
		}
	}
	if long < n/4-150 || long > n/4+150 {
		t.Errorf("%d long sections of %d, want about %d", long, n, n/4)
	}
	again := rand.New(rand.NewPCG(7, 0))
	r = rand.New(rand.NewPCG(7, 0))
	for range 100 {
		if a, b := w.Draw(r), w.Draw(again); a != b {
			t.Fatalf("the same seed drew %s and %s", a, b)
		}
	}
}

// TestParseThink: no --think is no wait and draws nothing; a given one
// reads as --work does, and its errors name --think.
func TestParseThink(t *testing.T) {
	w, err := ParseThink("")
	if err != nil || w != (Work{}) {
		t.Fatalf("\"\": %+v, %v; want the zero Work", w, err)
	}
	w, err = ParseThink("uniform:500ms-1s")
	if err != nil || w != (Work{Min: 500 * time.Millisecond, Max: time.Second}) {
		t.Fatalf("uniform:500ms-1s: %+v, %v", w, err)
	}
	for _, bad := range []string{"none", "uniform:1s-500ms", "fixed:-1s"} {
		if _, err := ParseThink(bad); err == nil || !strings.Contains(err.Error(), "--think") {
			t.Errorf("%q: %v, want an error naming --think", bad, err)
		}
	}
}
