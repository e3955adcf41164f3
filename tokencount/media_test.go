package tokencount_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/tokentest"
	"github.com/memcascade/memcascade/tokencount"
)

// wav returns a RIFF WAVE file of PCM audio: a LIST chunk before the data, as many encoders
// write, and a data chunk of the given size (dataField is what the header claims, to test
// streamed files whose header says 0 or 0xFFFFFFFF).
func wav(sampleRate, channels, bits, dataBytes int, dataField uint32) []byte {
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(4 + 8 + 16 + 8 + 4 + 8 + dataBytes))
	b.WriteString("WAVE")
	b.WriteString("fmt ")
	le(uint32(16))
	le(uint16(1))
	le(uint16(channels))
	le(uint32(sampleRate))
	le(uint32(sampleRate * channels * bits / 8))
	le(uint16(channels * bits / 8))
	le(uint16(bits))
	b.WriteString("LIST")
	le(uint32(3)) // odd: padded to 4
	b.WriteString("abc\x00")
	b.WriteString("data")
	le(dataField)
	for i := range dataBytes {
		b.WriteByte(byte(int(127 * math.Sin(float64(i)/5))))
	}
	return b.Bytes()
}

// mp3 returns MPEG-1 layer III frames at 128 kbit/s and 44.1 kHz (417 bytes each, no
// padding), after an ID3v2 tag; with xing, the first frame holds an Info header giving the
// frame count.
func mp3(frames int, xing bool) []byte {
	var b bytes.Buffer
	b.WriteString("ID3\x04\x00\x00")
	b.Write([]byte{0, 0, 0x01, 0x00}) // 128 bytes, syncsafe
	b.Write(make([]byte, 128))
	for i := range frames {
		frame := make([]byte, 417)
		copy(frame, []byte{0xff, 0xfb, 0x90, 0x00}) // stereo
		if i == 0 && xing {
			copy(frame[4+32:], "Info\x00\x00\x00\x01")
			binary.BigEndian.PutUint32(frame[4+32+8:], uint32(frames-1))
		}
		b.Write(frame)
	}
	return b.Bytes()
}

func audioMessage(data, format string) chat.Message {
	part, _ := json.Marshal(map[string]any{"type": "input_audio", "input_audio": map[string]string{"data": data, "format": format}})
	return chat.Message{Role: "user", Content: json.RawMessage("[" + string(part) + "]")}
}

// TestCountAudioPart checks that an input_audio part costs 1 token per 100 ms of its duration,
// read from generated files of known duration, instead of the tokens of its base64 as text.
func TestCountAudioPart(t *testing.T) {
	t.Parallel()
	c := tokentest.Counter(t, tokencount.EncodingO200k)
	framing := 3 + c.CountText("user")
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name   string
		data   string
		format string
		want   int
	}{
		// 16 kHz mono 16-bit: 32000 bytes a second.
		{"wav 2.5 s", b64(wav(16000, 1, 16, 80000, 80000)), "wav", 25},
		{"wav 2.51 s rounds up", b64(wav(16000, 1, 16, 80320, 80320)), "wav", 26},
		// 0.3 MB: 24 kHz mono 16-bit for 6.4 s (48000 bytes a second).
		{"wav 0.3 MB", b64(wav(24000, 1, 16, 307200, 307200)), "wav", 64},
		{"wav stereo 44.1 kHz 1 s", b64(wav(44100, 2, 16, 176400, 176400)), "wav", 10},
		{"wav streamed, size unknown", b64(wav(16000, 1, 16, 64000, 0xffffffff)), "wav", 20},
		{"wav streamed, size 0", b64(wav(16000, 1, 16, 64000, 0)), "wav", 20},
		{"wav as a data URL", "data:audio/wav;base64," + b64(wav(16000, 1, 16, 32000, 32000)), "wav", 10},
		{"wav named mp3", b64(wav(16000, 1, 16, 32000, 32000)), "", 10},
		// 100 frames of 1152 samples at 44.1 kHz: 2.612 s by the frame count.
		{"mp3 Info frame count", b64(mp3(101, true)), "mp3", 27},
		// 300 frames of 417 bytes at 128 kbit/s: 125100 bytes, 7.82 s.
		{"mp3 constant bit rate", b64(mp3(300, false)), "mp3", 79},
		// Not audio: 48000 bytes at the 128 kbit/s estimate is 3 s.
		{"unreadable", b64(bytes.Repeat([]byte{1, 2, 3}, 16000)), "mp3", 30},
		{"empty", "", "wav", 0},
	} {
		got := c.CountMessage(audioMessage(tc.data, tc.format)) - framing
		if got != tc.want {
			t.Errorf("%s: input_audio counts %d tokens, want %d", tc.name, got, tc.want)
		}
	}
	// The case of the issue: 0.3 MB of audio counted 272,825 tokens as text.
	big := audioMessage(b64(wav(24000, 1, 16, 307200, 307200)), "wav")
	if got := c.CountMessage(big); got > 100 {
		t.Errorf("0.3 MB of audio counts %d tokens", got)
	}
}

func pdf(pages int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n")
	fmt.Fprintf(&b, "2 0 obj << /Type /Pages /Count %d /Kids [", pages)
	for i := range pages {
		fmt.Fprintf(&b, "%d 0 R ", i+3)
	}
	b.WriteString("] >> endobj\n")
	for i := range pages {
		fmt.Fprintf(&b, "%d 0 obj <</Type/Page /Parent 2 0 R>> endobj\n", i+3)
		b.Write(bytes.Repeat([]byte("BT /F1 12 Tf (text) Tj ET\n"), 900)) // pushes pages across read boundaries
	}
	b.WriteString("%%EOF\n")
	return b.Bytes()
}

// TestCountFilePart checks the stated estimate for a PDF file part: 585 tokens per page (85
// for its image, 500 for its text) plus the filename, with pages read from the file.
func TestCountFilePart(t *testing.T) {
	t.Parallel()
	c := tokentest.Counter(t, tokencount.EncodingO200k)
	framing := 3 + c.CountText("user")
	count := func(file map[string]string) int {
		part, _ := json.Marshal(map[string]any{"type": "file", "file": file})
		return c.CountMessage(chat.Message{Role: "user", Content: json.RawMessage("[" + string(part) + "]")}) - framing
	}
	name := "report.pdf"
	for _, pages := range []int{1, 3, 40} {
		data := "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdf(pages))
		if got, want := count(map[string]string{"filename": name, "file_data": data}), pages*585+c.CountText(name); got != want {
			t.Errorf("a PDF of %d pages counts %d, want %d", pages, got, want)
		}
	}
	if got, want := count(map[string]string{"file_id": "file-abc123", "filename": name}), 585+c.CountText(name); got != want {
		t.Errorf("a file_id counts %d, want %d (one page)", got, want)
	}
	// No page objects to read: one page per 64 KiB.
	opaque := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 200<<10))
	if got, want := count(map[string]string{"file_data": opaque}), 4*585; got != want {
		t.Errorf("a file without readable pages counts %d, want %d", got, want)
	}
}
