package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	gojson "github.com/goccy/go-json"

	"github.com/lockbench/lockbench/jsonl"
)

// sameAsCopying holds Decode, whose strings are decoded without copies and
// then owned, to what decoding with copies makes of data: the same events,
// the same error.
func sameAsCopying(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := Decode(bytes.NewReader(data))
	want, wantErr := decode(bytes.NewReader(data), nil)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%q:\nerror %v\nwant  %v", data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\ndecoded %+v\nwant    %+v", data, got, want)
	}
}

// ownStrings leaves no string of an event in the memory it was decoded
// from, which jsonl reuses for the next block: the template sets every
// field, and the line it was decoded from is overwritten. Its strings
// need no escape in JSON: a string with one is decoded into memory of its
// own, and would hide a miss.
func TestOwnStringsOwnsEveryString(t *testing.T) {
	e := Event{Index: 1, Time: 1, Process: "c1", Type: Info, F: LeaseLost, Key: "x", Value: Int(1),
		Set: []int64{1}, Token: 1, Req: "c1-1", Fault: "pause", Shape: "one", Targets: []string{"c1", "c2"}, Error: "e", Attempt: 1, TTL: 1}
	v := reflect.ValueOf(e)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the template leaves %s unset: set it, and own its strings in ownStrings if it has any", v.Type().Field(i).Name)
		}
	}
	line, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonl.Strings
	for range 2 { // new words, then shared ones
		var got Event
		if err := gojson.UnmarshalWithOption(line, &got, gojson.DecodeNoCopyString()); err != nil {
			t.Fatal(err)
		}
		ownStrings(&got, &s)
		for i := range line {
			line[i] = '#'
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("a string was left in the line: %+v, want %+v", got, e)
		}
		if line, err = json.Marshal(e); err != nil {
			t.Fatal(err)
		}
	}
}

// Lines that the decoder must judge the same whoever owns their strings:
// escapes, numbers that are not integers, nulls, duplicated, unknown and
// differently cased keys, whitespace, wrong types and trailing bytes, as
// the only line, as the last one and as one in the middle.
func TestDecodeWithoutCopiesJudgesAsBefore(t *testing.T) {
	const ok = `{"index":9,"time":9,"process":"c9","type":"invoke","f":"acquire"}`
	lines := []string{
		`{"index":0,"time":1,"process":"c\u0031","type":"invoke","f":"acq\/uire"}`,
		`{"index":0,"time":1,"process":"c\"1","type":"invoke","f":"acquire","error":"a\nb\t\u00e9\ud83d\ude00"}`,
		`{"index":0,"time":1,"process":"\ud800","type":"invoke","f":"acquire"}`,
		`{"index":0,"time":1,"process":"c\x1","type":"invoke","f":"acquire"}`,
		"{\"index\":0,\"time\":1,\"process\":\"c\xff1\",\"type\":\"invoke\",\"f\":\"acquire\"}",
		"{\"index\":0,\"time\":1,\"process\":\"c\t1\",\"type\":\"invoke\",\"f\":\"acquire\"}",
		"{\"index\":0,\"time\":1,\"process\":\"c1\",\"type\":\"invoke\",\"f\":\"acquire\",\"error\":\"é\u2028\"}",
		`{"index":0,"time":1e3,"process":"c1","type":"invoke","f":"acquire"}`,
		`{"index":0,"time":1.0,"process":"c1","type":"invoke","f":"acquire"}`,
		`{"index":-0,"time":01,"process":"c1","type":"invoke","f":"acquire"}`,
		`{"index":0,"time":+1,"process":"c1","type":"invoke","f":"acquire"}`,
		`{"index":0,"time":9223372036854775808,"process":"c1","type":"invoke","f":"acquire"}`,
		`{"index":0,"time":-9223372036854775809,"process":"c1","type":"invoke","f":"acquire"}`,
		`{"index":0,"time":null,"process":null,"type":"invoke","f":"acquire","value":null,"set":null,"targets":null}`,
		`{"index":0,"time":1,"process":"c1","type":"ok","f":"read","value":1,"value":null}`,
		`{"index":0,"time":1,"process":"c1","process":"c2","type":"invoke","f":"acquire","set":[1],"set":[2,3]}`,
		`{"index":0,"time":1,"Process":"c1","PROCESS":"c2","proceſs":"c3","type":"invoke","f":"acquire","foo":{"a":[1,"x",null]}}`,
		` { "index" : 0 ,	"time" : 1 , "process" : "c1" , "type" : "invoke" , "f" : "acquire" } `,
		`{"index":0,"time":1,"process":"c1","type":"invoke","f":"acquire"}x`,
		`{"index":0,"time":1,"process":"c1","type":"invoke","f":"acquire"}{}`,
		`{"index":0,"time":"1","process":1,"type":"invoke","f":"acquire","set":[1,"a"],"targets":[1]}`,
		`{"index":0,"time":1,"process":"nemesis","type":"info","f":"start","targets":["a\u0000b","c1","c1"]}`,
		`null`, `[]`, `"s"`, `1`, `{}`, `{"index":0,"time":1,"process":"c1","type":"invoke","f":"acquire",}`,
		`{"index":0,"time":1,"process":"c1","type":"invoke","f":"acquire","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	}
	for _, l := range lines {
		sameAsCopying(t, []byte(l))
		sameAsCopying(t, []byte(ok+"\n"+l))
		sameAsCopying(t, []byte(l+"\n"+ok+"\n"))
	}
}

// The fuzz corpus and the golden histories decode as with copies.
func TestDecodeCorpusJudgedAsBefore(t *testing.T) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// go test fuzz v1, then []byte("...") quoted as in Go.
		_, arg, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(arg, "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sameAsCopying(t, []byte(s))
	}
	golden, err := filepath.Glob(filepath.Join("..", "checkers", "testdata", "*", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range golden {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sameAsCopying(t, data)
	}
}
