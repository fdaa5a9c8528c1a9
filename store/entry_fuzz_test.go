package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lockbench/lockbench/jsonl/jsonltest"
)

// FuzzReadLog holds ReadLog to its contract on arbitrary bytes: no panic,
// the same verdict as decoding with copies of every string, exactly the logs whose every line is a read or write with a known outcome,
// a req and a time, numbered in growing seqs, are accepted, ErrTruncated only for a last line that does not parse (what a store
// killed mid-write leaves), and an accepted log reads back the same after being written out the way the server writes it.
func FuzzReadLog(f *testing.F) {
	for _, data := range jsonltest.Files(f, filepath.Join("..", "checkers", "testdata", "*", "store.log")) {
		f.Add(data)
		// The same log cut mid-line.
		f.Add(data[:len(data)*2/3])
	}
	f.Add([]byte(""))
	f.Add([]byte("\r\n\n"))
	f.Add([]byte(`{"seq":0,"req":"c1-1","client":"c1","op":"write","key":"x","value":1,"outcome":"accepted"}` + "\r\n"))
	f.Add([]byte(`{"seq":0,"req":"r","op":"read","outcome":"rejected","reason":"stale token 1 < 2"}`))
	f.Add([]byte(`{"seq":0,"req":"r","op":"read","outcome":"accepted"}` + "\n{\"seq\":1,\"op\":\"wri"))
	f.Add([]byte(`{"seq":0,"req":"r","op":"delete","outcome":"accepted"}`))
	f.Add([]byte(`{"seq":0,"req":"r","op":"read","outcome":"accepted","set":[]}` + "\n" + `{"seq":1,"req":"w","op":"write","outcome":"accepted","set":[1,2]}`))
	f.Add([]byte(`{"seq":1,"req":"r","op":"read","outcome":"accepted"}` + "\n" + `{"seq":1,"req":"w","op":"write","outcome":"accepted"}`))
	f.Add([]byte(`{"seq":0,"time":-5,"req":"r","op":"read","outcome":"accepted"}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsCopying(t, data)
		entries, err := ReadLog(bytes.NewReader(data))
		if len(data) > 512<<10 {
			return // lines this long may hit the scanner's limit, which the oracle does not model
		}

		want, wantErr := readLogOracle(data)
		switch wantErr {
		case nil:
			if err != nil {
				t.Fatalf("ReadLog rejected a log whose every line is good: %v", err)
			}
		case ErrTruncated:
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("only the last line is bad, want ErrTruncated, got %v", err)
			}
		default:
			if err == nil || errors.Is(err, ErrTruncated) {
				t.Fatalf("want a hard error (%v), got %v", wantErr, err)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("a bad line is not ErrMalformed: %v", err)
			}
			if entries != nil {
				t.Fatalf("a failed read returned %d entries", len(entries))
			}
			return
		}
		if !reflect.DeepEqual(normalize(entries), normalize(want)) {
			t.Fatalf("read %+v, want %+v", entries, want)
		}

		var buf bytes.Buffer
		for _, e := range entries {
			line, err := json.Marshal(e)
			if err != nil {
				t.Fatalf("encode %+v: %v", e, err)
			}
			buf.Write(append(line, '\n'))
		}
		again, err := ReadLog(&buf)
		if err != nil {
			t.Fatalf("reading re-encoded entries: %v\n%s", err, buf.Bytes())
		}
		if !reflect.DeepEqual(normalize(again), normalize(entries)) {
			t.Fatalf("round trip changed the log:\n%+v\n%+v", entries, again)
		}
	})
}

// readLogOracle judges each line of data on its own and against the one
// before it: the entries if every line is good, ErrTruncated and the
// entries before it if only the last line does not parse, some other error
// if any line before it does not, or a line is not an entry a store writes.
func readLogOracle(data []byte) ([]Entry, error) {
	var lines [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		// bufio.ScanLines drops one trailing \r.
		if l = bytes.TrimSuffix(l, []byte("\r")); len(l) > 0 {
			lines = append(lines, l)
		}
	}
	var out []Entry
	for i, l := range lines {
		var e Entry
		if err := json.Unmarshal(l, &e); err != nil {
			if i == len(lines)-1 {
				return out, ErrTruncated
			}
			return nil, err
		}
		if (e.Outcome != Accepted && e.Outcome != Rejected) || (e.Op != "read" && e.Op != "write") {
			return nil, fmt.Errorf("op %q, outcome %q", e.Op, e.Outcome)
		}
		if e.Time < 0 || e.Req == "" || (len(out) > 0 && e.Seq <= out[len(out)-1].Seq) {
			return nil, fmt.Errorf("time %d, req %q, seq %d", e.Time, e.Req, e.Seq)
		}
		out = append(out, e)
	}
	return out, nil
}

// normalize maps empty slices (Set) to nil: omitempty writes both the same
// way, so the difference cannot survive a round trip and means nothing.
func normalize(entries []Entry) []Entry {
	out := make([]Entry, len(entries))
	for i, e := range entries {
		v := reflect.ValueOf(&e).Elem()
		for j := range v.NumField() {
			if f := v.Field(j); f.Kind() == reflect.Slice && f.Len() == 0 {
				f.SetZero()
			}
		}
		out[i] = e
	}
	return out
}
