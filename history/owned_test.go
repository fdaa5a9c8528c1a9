package history

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/jsonl/jsonltest"
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
// from, which jsonl reuses for the next block; the template sets every field.
func TestOwnStringsOwnsEveryString(t *testing.T) {
	e := Event{Index: 1, Time: 1, Process: "c1", Type: Info, F: LeaseLost, Key: "x", Value: Int(1),
		Set: []int64{1}, Token: 1, Req: "c1-1", Fault: "pause", Shape: "one", Targets: []string{"c1", "c2"}, Error: "e", Attempt: 1, TTL: 1}
	jsonltest.OwnsEveryString(t, e, ownStrings)
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
	for _, data := range jsonltest.FuzzSeeds(t, "FuzzDecode") {
		sameAsCopying(t, data)
	}
	for _, data := range jsonltest.Files(t, filepath.Join("..", "checkers", "testdata", "*", "history.jsonl")) {
		sameAsCopying(t, data)
	}
}
