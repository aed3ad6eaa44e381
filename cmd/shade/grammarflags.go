package main

import (
	"flag"
	"fmt"
	"os"

	"shade/grammar"
)

// grammarFlags are --grammar and --json-schema: the output's constraint.
type grammarFlags struct {
	gbnf, schema *string
}

func addGrammarFlags(fs *flag.FlagSet) *grammarFlags {
	return &grammarFlags{
		gbnf:   fs.String("grammar", "", "constrain the output to the GBNF grammar (llama.cpp's format) in `file`"),
		schema: fs.String("json-schema", "", "constrain the output to JSON valid for the JSON schema in `file` ({\"type\":\"object\"}: any object)"),
	}
}

// load compiles the grammar the flags name (nil when neither is set).
func (g *grammarFlags) load() (*grammar.Grammar, error) {
	if *g.gbnf != "" && *g.schema != "" {
		return nil, fmt.Errorf("--grammar and --json-schema both constrain the output: use one")
	}
	switch {
	case *g.gbnf != "":
		src, err := os.ReadFile(*g.gbnf)
		if err != nil {
			return nil, err
		}
		gr, err := grammar.Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("--grammar %s: %w", *g.gbnf, err)
		}
		return gr, nil
	case *g.schema != "":
		src, err := os.ReadFile(*g.schema)
		if err != nil {
			return nil, err
		}
		gr, err := grammar.FromJSONSchema(src)
		if err != nil {
			return nil, fmt.Errorf("--json-schema %s: %w", *g.schema, err)
		}
		return gr, nil
	}
	return nil, nil
}
