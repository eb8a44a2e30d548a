package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drama-tts/drama/voices"
)

// cloneForm is a POST /v1/voices request for voice id with the speech
// fixture's three clips and their words, its consent given by who.
func cloneForm(t *testing.T, clips []string, id, who string) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.WriteField("id", id)
	mw.WriteField("name", "Shared "+id)
	mw.WriteField("source", "consented")
	mw.WriteField("consent_who", who)
	mw.WriteField("consent_statement", "I, "+who+", agree that my voice is cloned for this test.")
	for i, c := range clips {
		w, _ := mw.CreateFormFile("clip", filepath.Base(c))
		data, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		mw.WriteField("transcript", fmt.Sprintf("Words of take%d.wav.", i+1))
	}
	mw.Close()
	return &b, mw.FormDataContentType()
}

// cloneAt posts a clone of id to url and returns the status and body. It
// sends the balancer tests' key, which a drama serve without keys ignores.
func cloneAt(t *testing.T, url string, clips []string, id, who string) (int, string) {
	t.Helper()
	body, ct := cloneForm(t, clips, id, who)
	req, _ := http.NewRequest("POST", url+"/v1/voices", body)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+lbKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(msg)
}

// withCodec gives a root's variant the file the encoder reads, so that
// drama serve on the stand-in clones.
func withCodec(t *testing.T, root string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "full", "codec.pth"), []byte("stand-in codec"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSharedVoiceStoreCloneRace: two drama serve sharing --voice-store
// are asked for a clone of one id at the same moment: one answers 201,
// the other 409 voice_exists, and the file is the winner's whole (its
// consent), not overwritten by the loser.
func TestSharedVoiceStoreCloneRace(t *testing.T) {
	shared := t.TempDir()
	clips := speechClips(t)
	var hosts [2]*server
	for i := range hosts {
		root := variantRoot(t)
		withCodec(t, root)
		hosts[i] = startServeRoot(t, root, nil, "--voice-store", shared)
	}
	for round := range 3 {
		id := fmt.Sprintf("race%d", round)
		var wg sync.WaitGroup
		var status [2]int
		var body [2]string
		for i, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status[i], body[i] = cloneAt(t, h.url, clips, id, fmt.Sprintf("Host %d", i))
			}()
		}
		wg.Wait()
		win := -1
		switch {
		case status[0] == 201 && status[1] == 409:
			win = 0
		case status[1] == 201 && status[0] == 409:
			win = 1
		default:
			t.Fatalf("round %d: the two clones of %s answered %d %s and %d %s, want one 201 and one 409", round, id, status[0], body[0], status[1], body[1])
		}
		if lose := body[1-win]; !strings.Contains(lose, `"voice_exists"`) || !strings.Contains(lose, "DELETE /v1/voices/"+id) {
			t.Errorf("round %d: the 409 says %s", round, lose)
		}
		v, err := voices.ReadFile(filepath.Join(shared, id+".json"), nil)
		if err != nil || v.Consent == nil || v.Consent.Who != fmt.Sprintf("Host %d", win) {
			t.Fatalf("round %d: the stored voice is not the winner's (host %d): %v %+v", round, win, err, v)
		}
	}
	if ents, _ := os.ReadDir(shared); len(ents) != 3 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the store holds %v, want the three voices alone", names)
	}
}

// voiceIDsAt lists the ids GET /v1/voices gives at url, asked with the
// balancer tests' key (ignored by a drama serve without keys).
func voiceIDsAt(t *testing.T, url string) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/v1/voices", nil)
	req.Header.Set("Authorization", "Bearer "+lbKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	var ids []string
	for _, v := range list.Data {
		ids = append(ids, v.ID)
	}
	return ids
}
