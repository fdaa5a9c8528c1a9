package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lockbench/lockbench/jsonl/jsonltest"
)

// FuzzDecode holds Decode to its contract on arbitrary bytes: it must not
// panic, must judge as decoding with copies of every string does, must
// accept exactly the histories whose every line is a valid event, may
// report ErrTruncated only for a bad last line (the one thing a crash of
// the harness can leave behind), and what it accepts must survive being
// written back out the way Writer writes it.
func FuzzDecode(f *testing.F) {
	for _, data := range jsonltest.Files(f, filepath.Join("..", "checkers", "testdata", "*", "history.jsonl")) {
		f.Add(data)
		// The same history cut mid-line, as a crash leaves it.
		f.Add(data[:len(data)*2/3])
	}
	f.Add([]byte(""))
	f.Add([]byte("\n\n\r\n"))
	f.Add([]byte(`{"index":0,"time":1,"process":"c1","type":"invoke","f":"acquire"}` + "\r\n"))
	f.Add([]byte(`{"index":0,"time":1,"process":"nemesis","type":"info","f":"start","targets":[]}`))
	f.Add([]byte(`{"index":0,"time":1,"process":"c1","type":"ok","f":"read","value":null}` + "\n{\"ind"))
	f.Add([]byte("{\"ind\n" + `{"index":1,"time":1,"process":"c1","type":"ok","f":"read"}`))
	f.Add([]byte(`{"index":0,"process":"c1","type":"done","f":"read"}`))
	f.Add([]byte(`{"index":0,"time":1,"process":"c1","type":"ok","f":"read","set":[]}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsCopying(t, data)
		events, err := Decode(bytes.NewReader(data))
		if len(data) > 1<<20 {
			return // beyond what the oracle below models; not panicking was the point
		}

		want, wantErr := decodeOracle(data)
		switch wantErr {
		case nil:
			if err != nil {
				t.Fatalf("Decode failed on a history whose every line is a valid event: %v", err)
			}
		case ErrTruncated:
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("only the last line is malformed, want ErrTruncated, got %v", err)
			}
		default:
			if err == nil || errors.Is(err, ErrTruncated) {
				t.Fatalf("want a hard error (%v), got %v", wantErr, err)
			}
			if events != nil {
				t.Fatalf("a hard error returned %d events", len(events))
			}
			return
		}
		if !reflect.DeepEqual(normalize(events), normalize(want)) {
			t.Fatalf("decoded %+v, want %+v", events, want)
		}
		for i, e := range events {
			switch e.Type {
			case Invoke, OK, Fail, Info:
			default:
				t.Fatalf("event %d has type %q", i, e.Type)
			}
			if e.Process == "" || e.F == "" {
				t.Fatalf("event %d has process %q, f %q", i, e.Process, e.F)
			}
		}

		var buf bytes.Buffer
		for _, e := range events {
			line, err := json.Marshal(e)
			if err != nil {
				t.Fatalf("encode %+v: %v", e, err)
			}
			buf.Write(append(line, '\n'))
		}
		again, err := Decode(&buf)
		if err != nil {
			t.Fatalf("decoding re-encoded events: %v\n%s", err, buf.Bytes())
		}
		if !reflect.DeepEqual(normalize(again), normalize(events)) {
			t.Fatalf("round trip changed the events:\n%+v\n%+v", events, again)
		}
	})
}

// decodeOracle says what Decode should make of data, judging each line on
// its own and then against the lines before it: the events if every line
// is good, ErrTruncated and the events before it if only the last line does
// not parse, some other error if any line before the last is bad, a line
// parses but is not a valid event, or the events could not have been
// recorded (see oracleStructure).
func decodeOracle(data []byte) ([]Event, error) {
	var lines [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		// bufio.ScanLines drops one trailing \r, so CRLF files read the same.
		l = bytes.TrimSuffix(l, []byte("\r"))
		if len(l) > 0 {
			lines = append(lines, l)
		}
	}
	var out []Event
	for i, l := range lines {
		var e Event
		if err := json.Unmarshal(l, &e); err != nil {
			if i == len(lines)-1 {
				return out, ErrTruncated
			}
			return nil, err
		}
		if err := e.validate(); err != nil {
			return nil, err
		}
		out = append(out, e)
		if err := oracleStructure(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// oracleStructure restates the rules across lines the plain way, over the
// whole prefix each time: indexes grow, no process's time goes backwards,
// and every completion other than a lone event's or the nemesis's answers
// the open invocation of the same f on its process, with no second
// invocation while one is open.
func oracleStructure(events []Event) error {
	last := events[len(events)-1]
	var prev *Event // the process's previous event
	var open *Event // its open invocation
	for i := range events[:len(events)-1] {
		e := &events[i]
		if e.Index >= last.Index {
			return errors.New("index does not grow")
		}
		if e.Process != last.Process {
			continue
		}
		prev = e
		switch {
		case e.Type == Invoke && !isLone(e.F):
			open = e
		case open != nil && e.Type != Invoke && e.F == open.F:
			open = nil
		}
	}
	if prev != nil && last.Time < prev.Time {
		return errors.New("time goes backwards")
	}
	if last.Process == Nemesis || isLone(last.F) {
		return nil
	}
	if last.Type == Invoke && open != nil {
		return errors.New("second invocation")
	}
	if last.Type != Invoke && (open == nil || open.F != last.F) {
		return errors.New("completion without invocation")
	}
	return nil
}

// normalize maps empty slices (Targets, Set) to nil: omitempty writes both
// the same way, so the difference cannot survive a round trip and means
// nothing.
func normalize(events []Event) []Event {
	out := make([]Event, len(events))
	for i, e := range events {
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
