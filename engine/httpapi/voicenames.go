package httpapi

import "sort"

// DefaultBuiltinVoice is the name drama serve gives the model's built-in
// voice unless told otherwise.
const DefaultBuiltinVoice = "default"

// OpenAIVoices are the voice names OpenAI's speech API offers. drama serves
// none of them unless the operator maps them to installed voices.
var OpenAIVoices = []string{"alloy", "ash", "ballad", "cedar", "coral", "echo", "fable", "marin", "nova", "onyx", "sage", "shimmer", "verse"}

func isOpenAIVoice(name string) bool {
	for _, v := range OpenAIVoices {
		if v == name {
			return true
		}
	}
	return false
}

// namedVoices are the entries GET /v1/voices shows beside the installed
// voices: the built-in voice (unless an installed voice has its name) and
// the operator's aliases.
func (s *Server) namedVoices(installed []VoiceInfo) []VoiceInfo {
	have := map[string]bool{}
	for _, v := range installed {
		have[v.ID] = true
	}
	var out []VoiceInfo
	if b := s.cfg.BuiltinVoice; b != "" && !have[b] {
		out = append(out, VoiceInfo{ID: b, Name: "the model's built-in voice", Origin: "builtin"})
	}
	names := make([]string, 0, len(s.cfg.VoiceAliases))
	for name := range s.cfg.VoiceAliases {
		if !have[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, VoiceInfo{ID: name, Name: name, Origin: "alias", AliasOf: s.cfg.VoiceAliases[name]})
	}
	return out
}

// resolveVoice turns the voice a request names into the engine's: an
// installed voice or a clone as it is, an alias into the voice it stands
// for, and the built-in voice into the engine's default (""). Anything
// else is a 400 that says how to serve the name.
func (s *Server) resolveVoice(id string) (string, *apiError) {
	origin := s.voiceOrigin(id)
	target := id
	if origin == "alias" {
		target = s.cfg.VoiceAliases[id]
		origin = s.voiceOrigin(target)
	}
	switch origin {
	case "engine", "clone":
		return target, nil
	case "builtin":
		return "", nil
	}
	if target != id {
		return "", badRequest("voice", "voice %q is mapped to %q (--voice-alias %s=%s), which this server does not serve: install that voice or map %q to one in GET /v1/voices",
			id, target, id, target, id)
	}
	if isOpenAIVoice(id) {
		example := "NAME"
		if b := s.cfg.BuiltinVoice; b != "" {
			example = b
		}
		return "", badRequest("voice", "unknown voice %q: OpenAI's voice names are served only when the operator maps them: start drama serve with --voice-alias %s=%s (NAME: a voice in GET /v1/voices; repeat --voice-alias for each name)",
			id, id, example)
	}
	return "", unknownVoice(id)
}

// unknownVoice is the answer to a voice this server does not serve.
func unknownVoice(id string) *apiError {
	return badRequest("voice", "unknown voice %q: GET /v1/voices lists the voices served", id)
}
