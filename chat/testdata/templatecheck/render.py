# Renders every NAME.jinja in this directory with Python's Jinja2 the way
# Hugging Face transformers renders chat templates (sandboxed, trim_blocks,
# lstrip_blocks, tojson as json.dumps with ensure_ascii=False), for the
# conversations of convos.json, into want.json. Then
#   SHADE_TEMPLATE_CHECK=$PWD go test ./chat -run TemplatesMatchPython
# checks that shade (gonja) renders the same text. See README.md.
import datetime, glob, json, os
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

here = os.path.dirname(os.path.abspath(__file__))
d = json.load(open(os.path.join(here, 'convos.json')))


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(msg):
    raise Exception(msg)


out = {}
for path in sorted(glob.glob(os.path.join(here, '*.jinja'))):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters['tojson'] = tojson
    env.globals['raise_exception'] = raise_exception
    # shade's tests render at this instant (fixedNow), and pass date_string as llama.cpp does.
    env.globals['strftime_now'] = lambda f: datetime.datetime(2026, 12, 1, 15, 4, 5).strftime(f)
    t = env.from_string(open(path).read())
    res = []
    for conv in d['convos']:
        msgs = json.loads(json.dumps(conv))
        for m in msgs:  # Hugging Face templates take the arguments as objects
            for tc in m.get('tool_calls', []):
                tc['function']['arguments'] = json.loads(tc['function']['arguments'])
        try:
            res.append(t.render(messages=msgs, tools=d['tools'], add_generation_prompt=True,
                                bos_token='<|begin_of_text|>', eos_token='<|eot_id|>', date_string='01 Dec 2026'))
        except Exception as e:
            res.append('ERROR: ' + str(e))
    out[os.path.basename(path)[:-len('.jinja')]] = res
json.dump(out, open(os.path.join(here, 'want.json'), 'w'), indent=1, ensure_ascii=False)
