package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"time"

	"shade/chat"
	"shade/engine"
	"shade/gguf"
	"shade/sample"
	"shade/speculate"
)

// chatInput and chatInterrupts are the terminal; tests replace them.
var (
	chatInput      io.Reader = os.Stdin
	chatInterrupts           = func() (<-chan os.Signal, func()) {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt)
		return ch, func() { signal.Stop(ch) }
	}
	chatBeforeStep func() // tests: slows replies down
)

func cmdChat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("chat", "chat -m MODEL.gguf [--system TEXT] [-n N] [--temp T] [--draft DRAFT.gguf --spec MODE] [--stats]", stderr)
	modelPath := fs.String("m", "", "model `file` (GGUF), or USER/REPO/FILE.gguf already pulled into the cache")
	sf := addSpecFlags(fs, true)
	system := fs.String("system", "", "system prompt")
	n := fs.Int("n", 512, "most tokens per reply")
	smp := addSamplingFlags(fs, sample.Params{Temp: 0.8, TopP: 0.95, RepeatPenalty: 1})
	seed := fs.Int64("seed", -1, "random seed (-1: a random one)")
	ctxSize := fs.Int("ctx", 0, "context size in tokens (0: the model's, at most 4096)")
	threads := fs.Int("threads", 0, "worker threads (0: one per CPU)")
	template := fs.String("template", "", "chat template: llama-2, llama-3 or chatml instead of the file's own")
	gf := addGrammarFlags(fs) // every reply follows the grammar
	showStats := fs.Bool("stats", false, "after each reply, print on stderr how many prompt tokens the conversation's kept KV saved and the prefill time")

	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := needModelOnly(fs, pos, *modelPath); err != nil {
		return err
	}
	if *n < 1 {
		return fmt.Errorf("-n must be at least 1")
	}
	gram, err := gf.load()
	if err != nil {
		return err
	}
	cfg, err := sf.config()
	if err != nil {
		return err
	}
	if *seed < 0 {
		*seed = int64(rand.Uint32())
	}
	params, err := smp.params(uint64(*seed))
	if err != nil {
		return err
	}
	e, err := openEngine(ctx, *modelPath, engine.Options{Threads: *threads, Draft: *sf.draft, Spec: cfg.Mode, Ctx: *ctxSize}, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	tmpl, warn := chat.FromGGUF(&e.Model.File.Meta, e.Tok)
	if warn != "" {
		fmt.Fprintf(stderr, "shade chat: %s\n", warn)
	}
	if *template != "" {
		if tmpl, err = builtinTemplate(e, *template); err != nil {
			return err
		}
	}
	ctxLen := e.ContextSize(*ctxSize)
	fmt.Fprintf(stderr, "shade chat: %s, template %s, context %d tokens. Ctrl-C stops a reply; Ctrl-C at the prompt, Ctrl-D or /exit quits; /reset forgets the conversation.\n",
		e.Model.File.Path, tmpl.Name(), ctxLen)

	sigs, stop := chatInterrupts()
	defer stop()
	lines := make(chan chatLine)
	go readLines(chatInput, maxChatLine, lines)
	var history []chat.Message
	// kept is the conversation's KV: each turn starts from the last one's
	// and prefills only what the prompt adds (the new message, and the
	// reply where its rendering differs from the tokens generated).
	var kept *engine.Prefix
	if *system != "" {
		history = append(history, chat.Message{Role: "system", Content: *system})
	}
	for turn := 0; ; turn++ {
		fmt.Fprint(stdout, "> ")
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(stdout)
				return nil
			}
			if l.err != nil {
				fmt.Fprintln(stdout)
				return fmt.Errorf("reading the input: %w", l.err)
			}
			if l.tooLong {
				fmt.Fprintf(stderr, "shade chat: that line is longer than %d MiB: skipped (a context of %d tokens cannot hold it)\n", maxChatLine>>20, ctxLen)
				continue
			}
			line = l.text
		case <-sigs:
			fmt.Fprintln(stdout)
			return nil
		}
		switch strings.TrimSpace(line) {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			history, kept = history[:0], nil
			if *system != "" {
				history = append(history, chat.Message{Role: "system", Content: *system})
			}
			fmt.Fprintln(stderr, "(conversation forgotten)")
			continue
		case "/help":
			fmt.Fprintln(stderr, "/reset forgets the conversation, /exit quits; Ctrl-C stops a reply")
			continue
		}
		history = append(history, chat.Message{Role: "user", Content: line})
		prompt, dropped, err := fitHistory(e, tmpl, &history, ctxLen-min(*n, ctxLen/2))
		if err != nil {
			history = history[:len(history)-1]
			fmt.Fprintf(stderr, "shade chat: %v\n", err)
			continue
		}
		if dropped > 0 {
			fmt.Fprintf(stderr, "(the %d oldest messages no longer fit the context and were dropped)\n", dropped)
		}
		genCtx, cancel := context.WithCancel(context.Background())
		stopped := make(chan bool, 1)
		done := make(chan struct{})
		go func() {
			select {
			case <-sigs:
				cancel()
				stopped <- true
			case <-done:
				stopped <- false
			}
		}()
		var reply strings.Builder
		req := engine.Request{MaxTokens: *n, Ctx: ctxLen, Sampling: params, Spec: cfg, Grammar: gram}
		req.Sampling.Seed = params.Seed + uint64(turn)
		sess, err := e.NewSessionFrom(req, prompt, kept)
		kept = nil // the session owns it now
		if err == nil {
			for !sess.Done() && err == nil {
				if chatBeforeStep != nil {
					chatBeforeStep()
				}
				_, err = sess.Step(genCtx, func(s string) error {
					reply.WriteString(s)
					_, werr := io.WriteString(stdout, s)
					return werr
				})
			}
		}
		close(done)
		interrupted := <-stopped
		cancel()
		if sess != nil {
			sess.Close()
			kept = sess.TakePrefix()
			if *showStats {
				st := sess.Stats()
				fmt.Fprintf(stderr, "\n(prompt %d tokens, %d from the kept conversation, prefill %v; %d tokens at %.1f tokens/s)",
					st.PromptTokens, st.CachedTokens, st.PromptDuration.Round(time.Microsecond), st.GenTokens, st.GenTPS)
			}
		}
		if errors.Is(err, gguf.ErrModelFileChanged) || errors.Is(err, speculate.ErrNonFinite) {
			fmt.Fprintln(stdout)
			return err // every later turn would fail the same way
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			history = history[:len(history)-1]
			fmt.Fprintf(stderr, "\nshade chat: %v\n", err)
			continue
		}
		if interrupted {
			fmt.Fprint(stdout, " [stopped]")
		}
		fmt.Fprintln(stdout)
		history = append(history, chat.Message{Role: "assistant", Content: strings.TrimSpace(reply.String())})
	}
}

// maxChatLine is the longest input line chat takes: far more than any
// context holds, and a bound on what one line can make it buffer.
const maxChatLine = 1 << 20

// chatLine is one line of chat input, or the line that was too long, or
// the read error that ended the input.
type chatLine struct {
	text    string
	tooLong bool
	err     error
}

// readLines sends r's lines (without their newline) on out, then closes
// it. A line longer than limit bytes is sent as tooLong and the reading
// goes on after it; a read error other than EOF is sent last.
func readLines(r io.Reader, limit int, out chan<- chatLine) {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	skipping := false
	for {
		frag, err := br.ReadSlice('\n')
		if !skipping {
			buf = append(buf, frag...)
		}
		if len(buf) > limit+1 { // +1: the newline; no need to keep more
			buf, skipping = buf[:0], true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if n := len(bytes.TrimSuffix(buf, []byte("\n"))); n > limit {
			buf, skipping = buf[:0], true
		}
		if skipping {
			out <- chatLine{tooLong: true}
			skipping = false
		} else if len(buf) > 0 {
			out <- chatLine{text: strings.TrimSuffix(strings.TrimSuffix(string(buf), "\n"), "\r")}
		}
		buf = buf[:0]
		if err != nil {
			if err != io.EOF {
				out <- chatLine{err: err}
			}
			return
		}
	}
}

// fitHistory renders the conversation and drops its oldest exchanges
// (keeping a system prompt and the last message) until it fits budget
// tokens. It returns the prompt's tokens and how many messages went.
func fitHistory(e *engine.Engine, tmpl *chat.Template, history *[]chat.Message, budget int) ([]int32, int, error) {
	dropped := 0
	for {
		ids, err := tmpl.Encode(e.Tok, *history, true) // what users typed stays text
		if err != nil {
			return nil, dropped, err
		}
		if len(ids) <= budget {
			return ids, dropped, nil
		}
		h := *history
		first := 0
		if len(h) > 0 && h[0].Role == "system" {
			first = 1
		}
		if len(h)-first <= 1 {
			return nil, dropped, fmt.Errorf("the message is %d tokens: too long for the context (%d tokens for the prompt)", len(ids), budget)
		}
		// Drop a user/assistant pair so roles still alternate.
		k := min(2, len(h)-first-1)
		*history = append(h[:first], h[first+k:]...)
		dropped += k
	}
}

// builtinTemplate is --template: a built-in format with the model's BOS/EOS.
func builtinTemplate(e *engine.Engine, name string) (*chat.Template, error) {
	bos, eos := "", ""
	if id := e.Tok.BOS(); id >= 0 {
		bos = e.Tok.Piece(id)
	}
	if id := e.Tok.EOS(); id >= 0 {
		eos = e.Tok.Piece(id)
	}
	return chat.Builtin(name, bos, eos)
}
