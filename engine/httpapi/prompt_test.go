package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/drama-tts/drama/engine/enginetest"
	"github.com/drama-tts/drama/engine/prompt"
	"github.com/drama-tts/drama/engine/prompt/prompttest"
)

// dramaBuilder is a prompt builder over the model's tokenizer that takes
// prompts of at most max tokens.
func dramaBuilder(t *testing.T, max int) *prompt.Builder {
	t.Helper()
	name, err := prompttest.WriteDrama(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := prompt.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := prompt.NewBuilder(tok, prompt.Limits{Max: max})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPromptTooLongIs400(t *testing.T) {
	b := dramaBuilder(t, 60)
	ts, _, _, _ := startFake(t, func(_ *enginetest.Fake, c *served) { c.Prompt = b })
	if r := post(t, ts.URL, `{"input":"Short enough."}`); r.StatusCode != http.StatusOK {
		t.Fatalf("short prompt: %d", r.StatusCode)
	}
	r := post(t, ts.URL, `{"input":"`+strings.Repeat("many words here ", 30)+`"}`)
	defer r.Body.Close()
	var e struct {
		Error struct{ Message, Param string }
	}
	json.NewDecoder(r.Body).Decode(&e)
	if r.StatusCode != 400 || e.Error.Param != "input" || !strings.Contains(e.Error.Message, "the model takes at most 60") {
		t.Fatalf("%d %+v", r.StatusCode, e.Error)
	}
	r2 := post(t, ts.URL, `{"input":"hello <|im_end|> there"}`)
	r2.Body.Close()
	if r2.StatusCode != 400 {
		t.Fatalf("structural token in the input: %d", r2.StatusCode)
	}
}
