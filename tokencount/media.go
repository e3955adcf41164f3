package tokencount

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"
	"regexp"
	"strings"
)

// Prices of audio and file content parts (see BPECounter.CountMessage).
const (
	// audioTokensPerSecond: "Audio tokens in user messages are 1 token per 100 ms of audio"
	// (OpenAI, Realtime API cost guide).
	audioTokensPerSecond = 10
	// audioFallbackBytesPerSecond is the rate assumed for audio whose duration cannot be read
	// from it: 128 kbit/s, a common MP3 bit rate. An estimate.
	audioFallbackBytesPerSecond = 128000 / 8
	// pdfPageImageTokens is counted per page for the image of the page OpenAI adds to the
	// context: the price of a low-detail image, which Chat Completions' file parts get.
	pdfPageImageTokens = imagePartTokens
	// pdfPageTextTokens is counted per page for its extracted text: a full page of prose, about
	// 375 words. An estimate: the text is not extracted here.
	pdfPageTextTokens = 500
	// pdfBytesPerPage estimates the pages of a PDF whose page objects cannot be read.
	pdfBytesPerPage = 64 << 10
)

// inputAudio is the input_audio of a content part: base64 audio in a format, "wav" or "mp3".
type inputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// tokens returns the audio's price: 10 tokens a second, rounded up per 100 ms.
func (a inputAudio) tokens() int {
	b := base64Data{s: stripDataURL(a.Data)}
	size := b.size()
	if size == 0 {
		return 0
	}
	seconds, ok := 0.0, false
	switch strings.ToLower(a.Format) {
	case "wav":
		seconds, ok = wavSeconds(b, size)
	case "mp3":
		seconds, ok = mp3Seconds(b, size)
	default:
		if seconds, ok = wavSeconds(b, size); !ok {
			seconds, ok = mp3Seconds(b, size)
		}
	}
	if !ok {
		seconds = float64(size) / audioFallbackBytesPerSecond
	}
	// Rounded up to whole 100 ms, with a margin for the float error of the division.
	return int(math.Ceil(seconds*audioTokensPerSecond - 1e-9))
}

// inputFile is the file of a content part: a PDF given as base64 data (or a data URL), or as
// the id of an uploaded file.
type inputFile struct {
	FileData string `json:"file_data"`
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
}

// tokens returns the estimated price of the file's pages (the filename is counted by the
// caller, as text).
func (f inputFile) tokens() int {
	b := base64Data{s: stripDataURL(f.FileData)}
	pages := pdfPages(b)
	if pages == 0 {
		pages = max(1, (b.size()+pdfBytesPerPage-1)/pdfBytesPerPage)
	}
	return pages * (pdfPageImageTokens + pdfPageTextTokens)
}

// stripDataURL returns the base64 of a data URL ("data:audio/wav;base64,...") or s as it is.
func stripDataURL(s string) string {
	if strings.HasPrefix(s, "data:") {
		if _, after, ok := strings.Cut(s, ";base64,"); ok {
			return after
		}
	}
	return s
}

// base64Data is standard base64 text whose decoded bytes are read a range at a time, so that
// a large file is never decoded whole.
type base64Data struct{ s string }

// size is the number of decoded bytes (assuming the text is valid base64).
func (b base64Data) size() int {
	n := len(b.s) / 4 * 3
	if rem := len(b.s) % 4; rem > 1 {
		n += rem - 1 // unpadded text
	}
	return n - strings.Count(b.s[max(0, len(b.s)-2):], "=")
}

// at returns up to n decoded bytes from offset off, or nil if that part is not valid base64.
func (b base64Data) at(off, n int) []byte {
	start := off / 3 * 4
	if start >= len(b.s) || n <= 0 {
		return nil
	}
	end := min(len(b.s), (off+n+2)/3*4)
	dec, err := base64.StdEncoding.DecodeString(b.s[start:end])
	if err != nil {
		dec, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(b.s[start:end], "="))
		if err != nil {
			return nil
		}
	}
	skip := off - off/3*3
	if skip >= len(dec) {
		return nil
	}
	return dec[skip:min(len(dec), skip+n)]
}

// wavSeconds reads a RIFF WAVE header: the data chunk's size over the byte rate of the fmt
// chunk. A data size of 0 or 0xFFFFFFFF (a stream written before its length was known) or one
// past the end means "to the end of the file".
func wavSeconds(b base64Data, size int) (float64, bool) {
	head := b.at(0, 12)
	if len(head) < 12 || string(head[:4]) != "RIFF" || string(head[8:12]) != "WAVE" {
		return 0, false
	}
	byteRate := 0
	for pos, chunks := 12, 0; pos+8 <= size && chunks < 1000; chunks++ {
		ch := b.at(pos, 24)
		if len(ch) < 8 {
			return 0, false
		}
		id, n := string(ch[:4]), int(binary.LittleEndian.Uint32(ch[4:8]))
		switch id {
		case "fmt ":
			if len(ch) < 20 {
				return 0, false
			}
			byteRate = int(binary.LittleEndian.Uint32(ch[16:20]))
		case "data":
			if byteRate <= 0 {
				return 0, false
			}
			start := pos + 8
			if n == 0 || uint32(n) == math.MaxUint32 || start+n > size {
				n = size - start
			}
			return float64(n) / float64(byteRate), true
		}
		pos += 8 + n + n%2 // chunks are padded to an even size
	}
	return 0, false
}

// MPEG audio frame tables, indexed by version (0 MPEG-1, 1 MPEG-2 and 2.5) and layer (0 for
// layer I, 1 for II, 2 for III).
var (
	mp3Bitrates = [2][3][16]int{
		{
			{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
			{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
			{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
		},
		{
			{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
			{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
			{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
		},
	}
	mp3SampleRates = map[int][3]int{3: {44100, 48000, 32000}, 2: {22050, 24000, 16000}, 0: {11025, 12000, 8000}}
)

// mp3Seconds reads an MP3's first frame after any ID3v2 tag: the frame count of a Xing, Info
// or VBRI header times the samples per frame over the sample rate, or else (constant bit rate)
// the audio's size over the frame's bit rate.
func mp3Seconds(b base64Data, size int) (float64, bool) {
	pos := 0
	if id3 := b.at(0, 10); len(id3) == 10 && string(id3[:3]) == "ID3" {
		n := int(id3[6]&0x7f)<<21 | int(id3[7]&0x7f)<<14 | int(id3[8]&0x7f)<<7 | int(id3[9]&0x7f)
		pos = 10 + n
		if id3[5]&0x10 != 0 {
			pos += 10 // a footer
		}
	}
	head := b.at(pos, 4096)
	for i := 0; i+4 <= len(head); i++ {
		h := head[i:]
		if h[0] != 0xff || h[1]&0xe0 != 0xe0 {
			continue
		}
		version, layer := int(h[1]>>3&3), int(h[1]>>1&3)
		rates, ok := mp3SampleRates[version]
		rateIndex, bitrateIndex := int(h[2]>>2&3), int(h[2]>>4)
		if !ok || layer == 0 || rateIndex == 3 || bitrateIndex == 0 || bitrateIndex == 15 {
			continue
		}
		v, l := 0, 3-layer // l: 0 for layer I, 1 for II, 2 for III
		if version != 3 {
			v = 1
		}
		sampleRate, bitrate := rates[rateIndex], mp3Bitrates[v][l][bitrateIndex]*1000
		samples := []int{384, 1152, 1152}[l]
		if l == 2 && v == 1 {
			samples = 576
		}
		mono := h[3]>>6 == 3
		side := map[[2]bool]int{{false, false}: 32, {false, true}: 17, {true, false}: 17, {true, true}: 9}[[2]bool{v == 1, mono}]
		if frames, ok := mp3FrameCount(h, 4+side); ok {
			return float64(frames) * float64(samples) / float64(sampleRate), true
		}
		return float64(size-pos-i) * 8 / float64(bitrate), true
	}
	return 0, false
}

// mp3FrameCount reads the frame count of a Xing or Info header at xing, or of a VBRI header at
// 36, in a first frame.
func mp3FrameCount(frame []byte, xing int) (int, bool) {
	if len(frame) >= xing+12 {
		if tag := string(frame[xing : xing+4]); (tag == "Xing" || tag == "Info") && frame[xing+7]&1 != 0 {
			return int(binary.BigEndian.Uint32(frame[xing+8:])), true
		}
	}
	if len(frame) >= 36+18 && string(frame[36:40]) == "VBRI" {
		return int(binary.BigEndian.Uint32(frame[36+14:])), true
	}
	return 0, false
}

// pdfPage matches a page object's type: "/Type /Page", not "/Type /Pages".
var pdfPage = regexp.MustCompile(`/Type\s{0,8}/Page(?:[^s]|$)`)

// pdfPages counts a PDF's page objects, decoding the base64 as a stream (a large file is never
// held decoded). It is 0 when there are none to read (page objects inside compressed object
// streams) or the data is not base64.
func pdfPages(b base64Data) int {
	if b.s == "" {
		return 0
	}
	r := bufio.NewReaderSize(base64.NewDecoder(base64.StdEncoding, strings.NewReader(b.s)), 64<<10)
	const overlap = 32 // longer than any match: a match cut by a read is found in the next
	buf := make([]byte, 0, 64<<10+overlap)
	pages := 0
	for {
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		last := err != nil
		limit := len(buf) - overlap // matches starting after it are counted with the next read
		if last {
			limit = len(buf)
		}
		for _, m := range pdfPage.FindAllIndex(buf, -1) {
			if m[0] < limit {
				pages++
			}
		}
		if last {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return pages
			}
			return 0 // not base64
		}
		buf = append(buf[:0], buf[limit:]...)
	}
}
