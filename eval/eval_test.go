package eval_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/eval"
)

const airline = "../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"

func load(t *testing.T, file string) []chat.Message {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msgs, err := eval.Load(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func configs(limit int, strategies ...string) []eval.Config {
	var out []eval.Config
	for _, s := range strategies {
		out = append(out, eval.Config{Name: s, Settings: compact.Settings{TokenLimit: limit, Strategy: s}})
	}
	return out
}

func TestAirlineTable(t *testing.T) {
	msgs := load(t, airline)
	res, err := eval.Run(context.Background(), eval.Options{Messages: msgs, Configs: configs(4000, "summarize", "mask", "window")})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	eval.Table(&b, res)
	t.Log("\n" + b.String())
	for _, c := range res.Configs {
		for _, p := range c.Probes {
			t.Logf("%s cp%d %s seq%d %q want %q got %q [%s] base %q", c.Name, p.Checkpoint, p.Kind, p.Seq, p.Text, p.Expected, p.Answer, p.Where, p.BaselineAns)
		}
	}
}
