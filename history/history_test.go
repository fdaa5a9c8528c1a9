package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriterNumbersAndDecodes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One process each: a process stamps and writes its own events
			// in order, so only different processes race here.
			if _, err := w.Append(Event{Process: fmt.Sprintf("c%d", i+1), Type: Invoke, F: Acquire, Time: Mono()}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// Readable before Close: each event is on disk as soon as it is appended.
	events, err := DecodeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 50 {
		t.Fatalf("%d events, want 50", len(events))
	}
	for i, e := range events {
		if e.Index != int64(i) {
			t.Errorf("event %d has index %d", i, e.Index)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeTruncatedTail(t *testing.T) {
	in := `{"index":0,"time":1,"process":"c1","type":"invoke","f":"acquire"}
{"index":1,"time":2,"process":"c1","type":"ok","f":"acquire","token":3}
{"index":2,"time":3,"process":"c1","ty`
	events, err := Decode(strings.NewReader(in))
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	if len(events) != 2 || events[1].Token != 3 {
		t.Fatalf("events = %+v", events)
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, in := range map[string]string{
		"corrupt middle line": `{"index":0,"time":1,"process":"c1","type":"invoke","f":"acquire"}
not json
{"index":2,"time":3,"process":"c1","type":"ok","f":"acquire"}`,
		"unknown type": `{"index":0,"time":1,"process":"c1","type":"maybe","f":"acquire"}`,
		"no process":   `{"index":0,"time":1,"type":"ok","f":"acquire"}`,
		"no f":         `{"index":0,"time":1,"process":"c1","type":"ok"}`,
	} {
		if _, err := Decode(strings.NewReader(in)); err == nil || errors.Is(err, ErrTruncated) {
			t.Errorf("%s: err = %v, want a decoding error", name, err)
		}
	}
}

func TestDecodeFileMissing(t *testing.T) {
	_, err := DecodeFile(filepath.Join(t.TempDir(), "none"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestMonoAdvances(t *testing.T) {
	a := Mono()
	b := Mono()
	if b < a {
		t.Fatalf("monotonic clock went back: %d then %d", a, b)
	}
}

func TestPair(t *testing.T) {
	h := []Event{
		{Index: 0, Process: "c1", Type: Invoke, F: Read},
		{Index: 1, Process: "c2", Type: Invoke, F: Write},
		{Index: 2, Process: Nemesis, Type: Info, F: Start},
		{Index: 3, Process: "c1", Type: OK, F: Read},
		{Index: 4, Process: "c1", Type: Info, F: LeaseLost},
	}
	ops := Pair(h)
	if len(ops) != 3 {
		t.Fatalf("%d ops, want 3: %+v", len(ops), ops)
	}
	if ops[0].Ret.Index != 3 || ops[0].Type != OK || !ops[0].Done {
		t.Errorf("c1's read: %+v", ops[0])
	}
	if ops[1].Done || ops[1].Type != Info {
		t.Errorf("c2's write never completed, so it is info: %+v", ops[1])
	}
	if !ops[2].Lone || ops[2].F != LeaseLost {
		t.Errorf("lease-lost stands alone: %+v", ops[2])
	}
}

// A completion that does not match the open invocation stands alone, and
// the invocation still takes its own completion later.
func TestRefsMismatchedCompletion(t *testing.T) {
	h := []Event{
		{Process: "c1", Type: Invoke, F: Read},
		{Process: Nemesis, Type: Info, F: Start},
		{Process: "c1", Type: OK, F: Write},
		{Process: "c1", Type: Fail, F: Read},
		{Process: "c2", Type: Invoke, F: Acquire},
	}
	refs, procs := Refs(h)
	if procs != 2 || len(refs) != 3 {
		t.Fatalf("%d processes, refs %+v", procs, refs)
	}
	if refs[0].Call != 0 || refs[0].Ret != 3 || refs[0].Type(h) != Fail {
		t.Errorf("c1's read: %+v", refs[0])
	}
	if !refs[1].Lone() || refs[1].Call != 2 {
		t.Errorf("the stray write completion: %+v", refs[1])
	}
	if refs[2].Done || refs[2].Type(h) != Info || refs[2].Proc != 1 {
		t.Errorf("c2's open acquire: %+v", refs[2])
	}
}
