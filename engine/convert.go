package engine

import (
	"time"

	pb "github.com/drama-tts/drama/engine/enginepb"
)

// This file converts between the Go contract and its protobuf form. Each
// pair is the identity on the fields the contract defines.

func descriptionToPB(d Description) *pb.Description {
	c := d.Capabilities
	return &pb.Description{
		Name: d.Name, Version: d.Version, ApiVersion: int32(d.APIVersion), Os: d.OS, Arch: d.Arch,
		Engine: d.Engine, Variants: d.Variants, MemoryEstimate: d.MemoryEstimate,
		Capabilities: &pb.Capabilities{
			Stream: c.Stream, LongForm: c.LongForm, References: c.References, Encode: c.Encode,
			VoiceCatalog: c.VoiceCatalog, RestartToClone: c.RestartToClone, MaxFrames: int32(c.MaxFrames),
		},
	}
}

func descriptionFromPB(p *pb.Description) Description {
	c := p.GetCapabilities()
	return Description{
		Name: p.GetName(), Version: p.GetVersion(), APIVersion: int(p.GetApiVersion()), OS: p.GetOs(),
		Arch: p.GetArch(), Engine: p.GetEngine(), Variants: p.GetVariants(), MemoryEstimate: p.GetMemoryEstimate(),
		Capabilities: Capabilities{
			Stream: c.GetStream(), LongForm: c.GetLongForm(), References: c.GetReferences(), Encode: c.GetEncode(),
			VoiceCatalog: c.GetVoiceCatalog(), RestartToClone: c.GetRestartToClone(), MaxFrames: int(c.GetMaxFrames()),
		},
	}
}

func installToPB(i Install) *pb.Install {
	return &pb.Install{
		Root: i.Root, Variant: i.Variant, ModelDir: i.ModelDir, EngineBin: i.EngineBin,
		EngineSha256: i.EngineSHA256, AllowEngineMismatch: i.AllowEngineMismatch,
	}
}

func installFromPB(p *pb.Install) Install {
	return Install{
		Root: p.GetRoot(), Variant: p.GetVariant(), ModelDir: p.GetModelDir(), EngineBin: p.GetEngineBin(),
		EngineSHA256: p.GetEngineSha256(), AllowEngineMismatch: p.GetAllowEngineMismatch(),
	}
}

func startToPB(r StartRequest) *pb.StartRequest {
	return &pb.StartRequest{
		Install: installToPB(r.Install), VoicesDir: r.VoicesDir, DefaultVoice: r.DefaultVoice,
		MaxFrames: int32(r.MaxFrames), LongForm: r.LongForm, NoGuidance: r.NoGuidance,
		Admission: string(r.Admission), ReadyTimeoutMs: r.ReadyTimeout.Milliseconds(),
		StallTimeoutMs: r.StallTimeout.Milliseconds(), RuntimeDir: r.RuntimeDir, Env: r.Env, Params: r.Params,
	}
}

func startFromPB(p *pb.StartRequest) StartRequest {
	return StartRequest{
		Install: installFromPB(p.GetInstall()), VoicesDir: p.GetVoicesDir(), DefaultVoice: p.GetDefaultVoice(),
		MaxFrames: int(p.GetMaxFrames()), LongForm: p.GetLongForm(), NoGuidance: p.GetNoGuidance(),
		Admission: Admission(p.GetAdmission()), ReadyTimeout: time.Duration(p.GetReadyTimeoutMs()) * time.Millisecond,
		StallTimeout: time.Duration(p.GetStallTimeoutMs()) * time.Millisecond, RuntimeDir: p.GetRuntimeDir(),
		Env: p.GetEnv(), Params: p.GetParams(),
	}
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func eventToPB(e LifecycleEvent) *pb.LifecycleEvent {
	return &pb.LifecycleEvent{
		Phase: pb.Phase(e.Phase), Message: e.Message, Progress: e.Progress, Pid: int32(e.PID),
		ExitCode: int32(e.ExitCode), LogTail: e.LogTail, UnixNano: unixNano(e.Time),
	}
}

func eventFromPB(p *pb.LifecycleEvent) LifecycleEvent {
	return LifecycleEvent{
		Phase: Phase(p.GetPhase()), Message: p.GetMessage(), Progress: p.GetProgress(), PID: int(p.GetPid()),
		ExitCode: int(p.GetExitCode()), LogTail: p.GetLogTail(), Time: fromUnixNano(p.GetUnixNano()),
	}
}

func healthToPB(h Health) *pb.HealthStatus {
	return &pb.HealthStatus{
		Phase: pb.Phase(h.Phase), Ready: h.Ready, Pid: int32(h.PID), SinceUnixNano: unixNano(h.Since),
		Message: h.Message, LastExit: h.LastExit,
	}
}

func healthFromPB(p *pb.HealthStatus) Health {
	return Health{
		Phase: Phase(p.GetPhase()), Ready: p.GetReady(), PID: int(p.GetPid()), Since: fromUnixNano(p.GetSinceUnixNano()),
		Message: p.GetMessage(), LastExit: p.GetLastExit(),
	}
}

func stopResultToPB(r StopResult) *pb.StopResult {
	return &pb.StopResult{WasRunning: r.WasRunning, ExitCode: int32(r.ExitCode), Killed: r.Killed, LogTail: r.LogTail}
}

func stopResultFromPB(p *pb.StopResult) StopResult {
	return StopResult{WasRunning: p.GetWasRunning(), ExitCode: int(p.GetExitCode()), Killed: p.GetKilled(), LogTail: p.GetLogTail()}
}

func voicesToPB(vs []Voice) *pb.VoicesResponse {
	out := &pb.VoicesResponse{Voices: make([]*pb.Voice, len(vs))}
	for i, v := range vs {
		out.Voices[i] = &pb.Voice{Id: v.ID, Name: v.Name, Source: v.Source, References: int32(v.References), Frames: int32(v.Frames)}
	}
	return out
}

func voicesFromPB(p *pb.VoicesResponse) []Voice {
	out := make([]Voice, len(p.GetVoices()))
	for i, v := range p.GetVoices() {
		out[i] = Voice{ID: v.GetId(), Name: v.GetName(), Source: v.GetSource(), References: int(v.GetReferences()), Frames: int(v.GetFrames())}
	}
	return out
}

func codesToPB(rows [][]int) *pb.Codes {
	out := &pb.Codes{Rows: make([]*pb.Codebook, len(rows))}
	for i, row := range rows {
		vals := make([]int32, len(row))
		for j, v := range row {
			vals[j] = int32(v)
		}
		out.Rows[i] = &pb.Codebook{Values: vals}
	}
	return out
}

func codesFromPB(p *pb.Codes) [][]int {
	if p == nil {
		return nil
	}
	out := make([][]int, len(p.GetRows()))
	for i, row := range p.GetRows() {
		vals := make([]int, len(row.GetValues()))
		for j, v := range row.GetValues() {
			vals[j] = int(v)
		}
		out[i] = vals
	}
	return out
}

func synthesisToPB(r SynthesisRequest) *pb.SynthesisRequest {
	refs := make([]*pb.Reference, len(r.References))
	for i, ref := range r.References {
		refs[i] = &pb.Reference{Text: ref.Text, Codes: codesToPB(ref.Codes)}
	}
	return &pb.SynthesisRequest{
		RequestId: r.RequestID, Input: r.Input, Voice: r.Voice, Instructions: r.Instructions, References: refs,
		MaxFrames: int32(r.MaxFrames), Stream: r.Stream, Speed: r.Speed, Params: r.Params,
	}
}

func synthesisFromPB(p *pb.SynthesisRequest) SynthesisRequest {
	var refs []Reference
	for _, ref := range p.GetReferences() {
		refs = append(refs, Reference{Text: ref.GetText(), Codes: codesFromPB(ref.GetCodes())})
	}
	return SynthesisRequest{
		RequestID: p.GetRequestId(), Input: p.GetInput(), Voice: p.GetVoice(), Instructions: p.GetInstructions(),
		References: refs, MaxFrames: int(p.GetMaxFrames()), Stream: p.GetStream(), Speed: p.GetSpeed(), Params: p.GetParams(),
	}
}

func headerToPB(h AudioHeader) *pb.AudioHeader {
	p := &pb.AudioHeader{SampleRate: int32(h.SampleRate), Channels: int32(h.Channels), BitsPerSample: int32(h.BitsPerSample), LongFormSegments: int32(h.LongFormSegments)}
	if h.Sized {
		p.Samples, p.Reason, p.SegmentOffsets = &h.Samples, pb.FinishReason(h.Reason), h.SegmentOffsets
	}
	return p
}

// headerFromPB reads a header; its size and end count as known only when
// the plugin sent them and they are whole: samples (0 or more) and a
// finish reason. Anything less, as from a plugin older than the fields,
// is a header whose length is known only at the end.
func headerFromPB(p *pb.AudioHeader) AudioHeader {
	h := AudioHeader{SampleRate: int(p.GetSampleRate()), Channels: int(p.GetChannels()), BitsPerSample: int(p.GetBitsPerSample()), LongFormSegments: int(p.GetLongFormSegments())}
	if p.Samples != nil && p.GetSamples() >= 0 && FinishReason(p.GetReason()).String() != "" {
		h.Sized, h.Samples, h.Reason, h.SegmentOffsets = true, p.GetSamples(), FinishReason(p.GetReason()), p.GetSegmentOffsets()
	}
	return h
}

func finalToPB(f Final) *pb.Final {
	return &pb.Final{
		Reason: pb.FinishReason(f.Reason), LongFormSegments: int32(f.LongFormSegments), SegmentOffsets: f.SegmentOffsets,
		Samples: f.Samples, FirstAudioUs: f.FirstAudio.Microseconds(), TotalUs: f.Total.Microseconds(), BusyRetries: int32(f.BusyRetries),
	}
}

func finalFromPB(p *pb.Final) Final {
	return Final{
		Reason: FinishReason(p.GetReason()), LongFormSegments: int(p.GetLongFormSegments()), SegmentOffsets: p.GetSegmentOffsets(),
		Samples: p.GetSamples(), FirstAudio: time.Duration(p.GetFirstAudioUs()) * time.Microsecond,
		Total: time.Duration(p.GetTotalUs()) * time.Microsecond, BusyRetries: int(p.GetBusyRetries()),
	}
}

func encodeToPB(r EncodeRequest) *pb.EncodeRequest {
	clips := make([]*pb.Clip, len(r.Clips))
	for i, c := range r.Clips {
		clips[i] = &pb.Clip{Id: c.ID, Path: c.Path, Data: c.Data, Text: c.Text}
	}
	return &pb.EncodeRequest{Install: installToPB(r.Install), Clips: clips, Params: r.Params}
}

func encodeFromPB(p *pb.EncodeRequest) EncodeRequest {
	var clips []Clip
	for _, c := range p.GetClips() {
		clips = append(clips, Clip{ID: c.GetId(), Path: c.GetPath(), Data: c.GetData(), Text: c.GetText()})
	}
	return EncodeRequest{Install: installFromPB(p.GetInstall()), Clips: clips, Params: p.GetParams()}
}

func progressToPB(e EncodeProgress) *pb.EncodeProgress {
	return &pb.EncodeProgress{ClipId: e.ClipID, Index: int32(e.Index), Count: int32(e.Count), Fraction: e.Fraction, Stage: e.Stage}
}

func progressFromPB(p *pb.EncodeProgress) EncodeProgress {
	return EncodeProgress{ClipID: p.GetClipId(), Index: int(p.GetIndex()), Count: int(p.GetCount()), Fraction: p.GetFraction(), Stage: p.GetStage()}
}

func encodedToPB(c EncodedClip) *pb.EncodedClip {
	return &pb.EncodedClip{ClipId: c.ClipID, Text: c.Text, Codes: codesToPB(c.Codes), Frames: int32(c.Frames), Samples: c.Samples}
}

func encodedFromPB(p *pb.EncodedClip) EncodedClip {
	return EncodedClip{ClipID: p.GetClipId(), Text: p.GetText(), Codes: codesFromPB(p.GetCodes()), Frames: int(p.GetFrames()), Samples: p.GetSamples()}
}
