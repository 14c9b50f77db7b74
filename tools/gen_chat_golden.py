#!/usr/bin/env python3
"""Golden outputs for the chat template engine (src/chat), rendered by Jinja2.

The Jinja2 environment is configured the way transformers' apply_chat_template
configures it (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, a json.dumps tojson, raise_exception, strftime_now, the
{% generation %} tag), so the outputs are what Hugging Face would produce.

Writes into OUT_DIR (default tests/fixtures/chat):
  qwen3_chat_template.jinja  the chat_template string of Qwen3's tokenizer_config.json
  qwen3_cases.json           conversations + expected renderings with that template
  construct_cases.json       small hand-written templates, one construct each

Usage: tools/gen_chat_golden.py [--tokenizer-config PATH] [--out OUT_DIR]
(the tokenizer config comes from scripts/fetch-qwen3-tokenizer.sh).
"""
import argparse
import json
import os
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class GenerationTag(Extension):
    """transformers' AssistantTracker: {% generation %} renders its body unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_case(env, template_text, context):
    """Returns {"expected": text} or {"expected_error": message, "error_type": name}."""
    tmpl = env.from_string(template_text)
    try:
        return {"expected": tmpl.render(**context)}
    except Exception as e:  # noqa: BLE001 - the error itself is the golden result
        return {"expected_error": str(e), "error_type": type(e).__name__}


def special_tokens(config):
    """What transformers' special_tokens_map passes to the template (unset tokens are left out)."""
    def content(tok):
        return tok["content"] if isinstance(tok, dict) else tok

    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        if config.get(key) is not None:
            out[key] = content(config[key])
    if config.get("additional_special_tokens"):
        out["additional_special_tokens"] = [content(t) for t in config["additional_special_tokens"]]
    return out


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Søk i dokumentene — returns «snippets» with scores.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "top_k": {"type": "integer", "default": 5, "minimum": 1},
                "threshold": {"type": "number", "default": 0.25},
                "filters": {"type": "object", "properties": {"lang": {"type": ["string", "null"]}}},
            },
            "required": ["query"],
        },
    },
}

SYS = {"role": "system", "content": "You are a helpful assistant."}


def call(name, arguments, wrapped=True, call_id=None):
    fn = {"name": name, "arguments": arguments}
    if not wrapped:
        return fn
    out = {"type": "function", "function": fn}
    if call_id:
        out = {"id": call_id, **out}
    return out


def qwen3_conversations():
    """(name, messages, options) with options as apply_chat_template keyword arguments."""
    c = []
    c.append(("single_user", [{"role": "user", "content": "Hello!"}], {}))
    c.append(("system_and_user", [SYS, {"role": "user", "content": "What is 2+2?"}], {}))
    c.append(("thinking_false", [SYS, {"role": "user", "content": "Be brief."}], {"enable_thinking": False}))
    c.append(("thinking_true", [SYS, {"role": "user", "content": "Think hard."}], {"enable_thinking": True}))
    c.append(("no_generation_prompt", [{"role": "user", "content": "Hi"}], {"add_generation_prompt": False}))
    c.append(("no_generation_prompt_thinking_false", [{"role": "user", "content": "Hi"}],
              {"add_generation_prompt": False, "enable_thinking": False}))
    c.append(("multi_turn_plain", [
        SYS,
        {"role": "user", "content": "Name a fruit."},
        {"role": "assistant", "content": "Apple."},
        {"role": "user", "content": "Another one?"},
    ], {}))
    c.append(("multi_turn_reasoning_content", [
        {"role": "user", "content": "What is 3*7?"},
        {"role": "assistant", "content": "21", "reasoning_content": "3 times 7 is 21."},
        {"role": "user", "content": "And 3*8?"},
        {"role": "assistant", "content": "\n24", "reasoning_content": "\n3 times 8 is 24.\n"},
    ], {"add_generation_prompt": False}))
    c.append(("think_tags_in_history", [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "<think>\nold reasoning\n</think>\n\nA1"},
        {"role": "user", "content": "Q2"},
    ], {"enable_thinking": True}))
    c.append(("think_tags_in_final_assistant", [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "<think>\nstep one\nstep two\n</think>\n\nThe answer."},
    ], {"add_generation_prompt": False}))
    c.append(("reasoning_content_null_uses_tags", [
        {"role": "user", "content": "Q"},
        {"role": "assistant", "content": "pre<think>r</think>post", "reasoning_content": None},
    ], {"add_generation_prompt": False}))
    c.append(("final_assistant_without_reasoning", [
        {"role": "user", "content": "Q"},
        {"role": "assistant", "content": "Just the answer."},
    ], {"add_generation_prompt": False}))
    c.append(("tools_with_system", [SYS, {"role": "user", "content": "Weather in Paris?"}],
              {"tools": [WEATHER_TOOL, SEARCH_TOOL]}))
    c.append(("tools_without_system", [{"role": "user", "content": "Find cats."}], {"tools": [SEARCH_TOOL]}))
    c.append(("tools_empty_list", [SYS, {"role": "user", "content": "Hi"}], {"tools": []}))
    c.append(("tool_call_dict_arguments", [
        SYS,
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris", "unit": "celsius"}, call_id="call_1")]},
        {"role": "tool", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "It is 21.5 °C and clear in Paris."},
        {"role": "user", "content": "Thanks!"},
    ], {"tools": [WEATHER_TOOL]}))
    c.append(("tool_call_string_arguments", [
        {"role": "user", "content": "Search for llamas"},
        {"role": "assistant", "content": "", "tool_calls": [call("search", "{\"query\": \"llamas\", \"top_k\": 3}")]},
        {"role": "tool", "content": "3 results"},
    ], {"tools": [SEARCH_TOOL]}))
    c.append(("tool_call_unwrapped", [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Oslo"}, wrapped=False)]},
        {"role": "tool", "content": "cold"},
    ], {"tools": [WEATHER_TOOL]}))
    c.append(("tool_calls_several_with_content", [
        {"role": "user", "content": "Compare Paris and Rome weather, then search."},
        {"role": "assistant", "content": "Let me check both.", "tool_calls": [
            call("get_weather", {"city": "Paris"}),
            call("get_weather", {"city": "Rome", "unit": "fahrenheit"}),
            call("search", {"query": "weather \"Europe\"\n", "top_k": 2, "threshold": 0.5, "filters": {"lang": None}, "exact": True}),
        ]},
        {"role": "tool", "content": "Paris: 20"},
        {"role": "tool", "content": "Rome: 77F"},
        {"role": "tool", "content": "no results"},
    ], {"tools": [WEATHER_TOOL, SEARCH_TOOL]}))
    c.append(("multi_step_tools_reasoning", [
        SYS,
        {"role": "user", "content": "Plan a trip."},
        {"role": "assistant", "content": "", "reasoning_content": "Need weather first.", "tool_calls": [call("get_weather", {"city": "Lisbon"})]},
        {"role": "tool", "content": "sunny"},
        {"role": "assistant", "content": "", "reasoning_content": "Now search.", "tool_calls": [call("search", {"query": "Lisbon hotels"})]},
        {"role": "tool", "content": "Hotel A, Hotel B"},
    ], {"tools": [WEATHER_TOOL, SEARCH_TOOL], "enable_thinking": True}))
    c.append(("user_tool_response_wrapped", [
        {"role": "user", "content": "Start"},
        {"role": "assistant", "content": "<think>\nthinking\n</think>\n\ncalling", "tool_calls": [call("search", {"query": "x"})]},
        {"role": "user", "content": "<tool_response>\nresult\n</tool_response>"},
        {"role": "assistant", "content": "Done."},
    ], {"add_generation_prompt": False}))
    c.append(("system_not_first", [
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": "Late system note."},
        {"role": "user", "content": "Again"},
    ], {}))
    c.append(("unicode_content", [
        {"role": "system", "content": "Réponds en français, s'il te plaît. 日本語もOK。"},
        {"role": "user", "content": "emoji 👩‍💻🏳️‍🌈, combining e\u0301, Arabic مرحبا, zero\u200bwidth, tab\tend"},
        {"role": "assistant", "content": "<think>\n思考中…\n</think>\n\n答え：✓", "tool_calls": [call("search", {"query": "café ☕ «quoted» \\ back\u00a0slash"})]},
        {"role": "tool", "content": "résultat: 東京"},
    ], {"tools": [SEARCH_TOOL], "enable_thinking": False}))
    c.append(("whitespace_edges", [
        {"role": "user", "content": "\n\n  leading and trailing  \n\n"},
        {"role": "assistant", "content": "\n\nanswer with newlines\n\n", "reasoning_content": "\n\nreason\n\n"},
    ], {"add_generation_prompt": False}))
    c.append(("special_tokens_in_text", [
        {"role": "user", "content": "Say <|im_end|> and <|endoftext|> literally"},
    ], {"enable_thinking": True}))
    c.append(("long_history", [SYS] + [
        m for i in range(6) for m in (
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"<think>r{i}</think>answer {i}"},
        )
    ] + [{"role": "user", "content": "final question"}], {}))
    c.append(("extra_fields_ignored", [
        {"role": "user", "content": "Hi", "name": "alice", "metadata": {"k": 1}},
    ], {"add_generation_prompt": True}))
    # Errors Jinja2 raises too: the engine must fail rather than render something.
    c.append(("error_empty_messages", [], {}))
    c.append(("error_assistant_content_none", [
        {"role": "user", "content": "Q"},
        {"role": "assistant", "content": None, "tool_calls": [call("search", {"query": "q"})]},
    ], {"add_generation_prompt": False}))
    return c


def construct_cases():
    """(name, template, context): each exercises one construct of the supported subset."""
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
            {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]
    c = []
    add = lambda name, tmpl, ctx=None: c.append((name, tmpl, ctx or {}))  # noqa: E731
    # Whitespace control, trim_blocks, lstrip_blocks, comments, newlines.
    add("ws_trim_lstrip", "a\n  {% if true %}\n    b\n  {% endif %}\nc\n")
    add("ws_minus_both_sides", "x   {%- if true -%}   y   {%- endif -%}   z")
    add("ws_plus_disables_lstrip", "a\n    {%+ if true %}b{% endif %}\n")
    add("ws_plus_disables_trim", "{% if true +%}\nb\n{% endif %}\n")
    add("ws_variable_minus", "a  \n {{- 'b' -}} \n  c {{ 'd' }}\n e")
    add("ws_variable_not_lstripped", "a\n   {{ 'b' }}\n")
    add("ws_comment_trim", "a\n  {# comment #}\nb {#- c -#} c\n{# multi\nline #}d")
    add("ws_crlf_and_trailing_newline", "line1\r\n{% if true %}\r\nline2\r\n{% endif %}\r\n")
    add("ws_tag_at_start_lstripped", "   {% if true %}x{% endif %}")
    add("ws_tag_after_text_not_lstripped", "t   {% if true %}x{% endif %}")
    add("ws_two_trailing_newlines", "a\n\n")
    # Literals and output formatting (Python str / repr).
    add("literals_repr", "{{ [1, 2.5, 'a', none, true, {'k': \"it's\"}] }}|{{ (1, 2) | list }}|{{ {'a': [1]}|string }}")
    add("float_formatting", "{{ 1.0 }} {{ 1e20 }} {{ 1e-5 }} {{ 0.1 + 0.2 }} {{ 3 / 2 }} {{ 4 / 2 }} {{ 1e16 }} {{ 123456789.125 }} {{ 0.0001 }} {{ -0.0 }}")
    add("string_escapes", "{{ 'a\\nb\\tc\\\\d\\'e\\\"f\\u00e9\\x41' }}|{{ \"dq 'single'\" }}|{{ 'adj' 'acent' }}")
    add("repr_quotes_and_controls", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n', 'tab\\t', '\\x01', 'é', '\\u00a0', '日本'] }}")
    add("integers_underscores", "{{ 1_000 + 0 }} {{ 007 if false else 7 }}".replace("007", "7"))
    # Arithmetic and concatenation.
    add("arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1 + 2 * 3 - 4 }} {{ -3 + +2 }} {{ true + 1 }}")
    add("concat_tilde_plus", "{{ 'a' ~ 1 ~ none ~ true ~ [1] }}|{{ 'a' + 'b' }}|{{ [1] + [2, 3] }}|{{ 'ab' * 3 }}|{{ 2 * [0] }}")
    add("pow_of_negative_constant", "{{ -2 ** n }} {{ -2 ** 2 }} {{ (-2) ** 2 }} {{ -(2) ** n }} {{ -n ** 2 }} {{ 2 ** -1 }}", {"n": 2})
    add("str_plus_int_error", "{{ 'a' + 1 }}")
    add("division_by_zero_error", "{{ 1 / 0 }}")
    # Comparisons and logic.
    add("comparisons", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 'x' != 'y' }} {{ 2 >= 2 }} {{ none == none }} {{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}")
    add("and_or_not_values", "{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ none or [] }}|{{ not 0 }}|{{ not [1] }}|{{ not x is defined }}")
    add("in_not_in", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 3 not in [1, 2] }} {{ 'a' in u }} {{ 1.0 in [1] }}")
    add("in_none_error", "{{ 'a' in none }}")
    add("compare_type_error", "{{ 1 < 'a' }}")
    add("cond_expr", "{{ 'y' if true else 'n' }}{{ 'y' if false else 'n' }}[{{ 'y' if false }}]{{ 1 if 0 else 2 if 1 else 3 }}")
    # if / elif / else.
    add("if_elif_else", "{% for n in [1, 2, 3, 4] %}{% if n == 1 %}one{% elif n == 2 %}two{% elif n == 3 %}three{% else %}other{% endif %},{% endfor %}")
    # for loops.
    add("for_loop_vars", "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('o', 'e') }}{{ loop.depth }};{% endfor %}")
    add("for_else", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}")
    add("for_filter", "{% for x in range(10) if x is odd %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %}")
    add("for_dict_items_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for k, v in d|items %}{{ v }}{% endfor %}", {"d": {"z": 1, "a": [2], "m": None}})
    add("for_string_chars", "{% for ch in 'héllo' %}[{{ ch }}]{% endfor %}")
    add("for_nested_loop", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }}{% endfor %}/{{ loop.index }} {% endfor %}")
    add("for_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}")
    add("for_over_undefined", "{% for x in nothing %}{{ x }}{% else %}none{% endfor %}")
    add("for_messages_reversed", "{% for m in messages[::-1] %}{{ (messages|length - 1) - loop.index0 }}{{ m.role }} {% endfor %}", {"messages": msgs})
    # set and scoping.
    add("set_scoping_in_loop", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 10 %}{{ x }} {% endfor %}{{ x }}")
    add("set_in_if_leaks", "{% if true %}{% set z = 5 %}{% endif %}{{ z }}")
    add("set_tuple_and_block", "{% set a, b = 1, 'two' %}{{ a }}{{ b }}{% set blk %}x{{ a }}y{% endset %}[{{ blk }}]")
    add("namespace_assign", "{% set ns = namespace(found=false, n=0, items=[]) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}{% set ns.n = ns.n + 1 %}{% set ns.last = m.content %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }} {{ ns.last }} {{ ns.missing is defined }}", {"messages": msgs})
    add("namespace_from_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}")
    add("set_attr_on_non_namespace_error", "{% set d = {} %}{% set d.x = 1 %}")
    # Subscripts, slices, attributes.
    add("slicing", "{{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[-2:] }} {{ 'abcdef'[::2] }} {{ [1, 2, 3, 4][1:-1] }} {{ [1, 2, 3][-1] }} {{ 'héllo'[1] }} {{ [1, 2, 3][5:] }} {{ [1, 2, 3, 4, 5][4:0:-2] }} {{ 'abc'[-10:10] }}")
    add("attribute_and_subscript", "{{ m.role }} {{ m['content'] }} {{ msgs[1].content }} {{ msgs.1.role }} {{ msgs[-1]['content'] }} [{{ msgs[10] }}] [{{ m.nope }}] {{ m['items'] }} {{ m.get('role') }} {{ m.get('nope', 'dflt') }}", {"m": {"role": "user", "content": "hi", "items": 3}, "msgs": msgs})
    add("dict_methods", "{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list|length }} {{ (d.items()|list)[1][0] }}", {"d": {"b": 1, "a": 2}})
    add("undefined_attribute_error", "{{ missing.attr }}")
    add("undefined_plus_error", "{{ missing + 'x' }}")
    add("undefined_behaviour", "[{{ missing }}][{{ missing|length }}][{{ missing|default('d') }}][{{ missing is defined }}][{{ missing == missing }}][{{ missing ~ 'x' }}][{{ missing|string }}][{{ missing|trim }}][{{ missing|join(',') }}][{{ missing is none }}][{{ missing|first }}][{{ not missing }}]")
    # Tests.
    add("tests_types", "{% for v in [none, true, false, 0, 1.5, 'x', [1], {'a': 1}] %}{{ v is none }}{{ v is boolean }}{{ v is true }}{{ v is false }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is string }}{{ v is mapping }}{{ v is sequence }}{{ v is iterable }}{{ v is callable }}|{% endfor %}{{ u is sequence }}{{ u is mapping }}")
    add("tests_values", "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 2 is eq 2 }}{{ 2 is ne 2 }}{{ 1 is lt 2 }}{{ 2 is ge 3 }}{{ 'a' is in 'abc' }}{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ none is sameas none }}{{ x is not defined }}{{ 1 is not string }}")
    # Filters.
    add("filter_length_count", "{{ 'héllo'|length }} {{ [1, 2]|length }} {{ {'a': 1}|count }} {{ messages|length - 1 }}", {"messages": msgs})
    add("filter_tojson_default", "{{ d|tojson }}", {"d": {"b": 1, "a": [1, 2.0, "é\n\"\\", None, True, False], "c": {}, "e": [], "f": 1e-7, "g": "\u0001\u007f\u2028"}})
    add("filter_tojson_options", "{{ d|tojson(indent=2) }}\n{{ d|tojson(indent=0) }}\n{{ d|tojson(separators=(',', ':')) }}\n{{ d|tojson(sort_keys=true) }}\n{{ d|tojson(ensure_ascii=true) }}\n{{ d|tojson(indent='\\t') }}", {"d": {"b": 1, "a": [1, {"x": "é😀"}, []], "c": {}}})
    add("filter_tojson_scalars", "{{ 'x'|tojson }} {{ 1|tojson }} {{ 1.5|tojson }} {{ none|tojson }} {{ true|tojson }} {{ [1, 'a']|tojson }}")
    add("filter_trim", "[{{ '  a b \\n'|trim }}][{{ 'xxaxx'|trim('x') }}][{{ '\\u3000wide\\u00a0'|trim }}]")
    add("filter_string_first_last", "{{ 5|string }}{{ [1, 2]|string }}{{ [3, 4]|first }}{{ [3, 4]|last }}{{ 'xyz'|first }}{{ 'xyz'|last }}{{ {'k': 1, 'j': 2}|first }}[{{ []|first }}]")
    add("filter_default", "{{ none|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ u|default('d') }} {{ u|d('dd') }} {{ 0|default(5, boolean=true) }}")
    add("filter_join_upper_lower", "{{ ['a', 1, none]|join(', ') }} {{ 'MiXeD'|upper }} {{ 'MiXeD'|lower }} {{ [{'n': 'x'}, {'n': 'y'}]|join('-', attribute='n') }} {{ 'straße'|upper }} {{ 'ﬁne straße'.title() }} {{ 'İ'|lower|length }}")
    add("filter_misc", "{{ 'hello world-foo'|capitalize }} {{ 'hello world-foo (bar)'|title }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|list }} {{ [1, 2, 3]|reverse|list }} {{ 'abc'|reverse }} {{ '42'|int + 1 }} {{ 'x'|int(7) }} {{ '3.5'|float }} {{ -3|abs }} {{ [1, 2, 1, 'A', 'a']|unique|list }}")
    add("filter_select_map", "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|join(',') }} {{ msgs|rejectattr('role', 'eq', 'user')|list|length }} {{ [0, 1, 2, '', 'x']|select|list }} {{ [1, 2, 3]|reject('odd')|list }} {{ ['a', 'b']|map('upper')|list }}", {"msgs": msgs})
    add("filter_sort_dictsort", "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }} {{ tools|sort(attribute='name')|map(attribute='name')|join(',') }} {{ tools|sort(attribute='p,name', reverse=true)|map(attribute='name')|join(',') }} {% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %} {% for k, v in d|dictsort(by='value', reverse=true) %}{{ k }};{% endfor %}", {"tools": [{"name": "b", "p": 1}, {"name": "a", "p": 2}, {"name": "C", "p": 1}], "d": {"b": 2, "A": 3, "c": 1}})
    add("filter_sort_type_error", "{{ [1, 'a']|sort }}")
    add("filter_min_max_sum_round", "{{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ ['b', 'A']|min }} {{ ['b', 'A']|max(case_sensitive=true) }} {{ []|max }} {{ [1, 2.5]|sum }} {{ xs|sum(attribute='n') }} {{ [1]|sum(start=10) }} {{ 2.675|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ -0.4|round }} {{ 7|round }} {{ 1.21|round(1, 'ceil') }} {{ 1.29|round(1, 'floor') }} {{ xs|max(attribute='n') }}", {"xs": [{"n": 1}, {"n": 5}, {"n": 5.0}]})
    add("filter_indent", "[{{ 'a\nb\n\nc'|indent }}][{{ 'a\nb'|indent(2, true) }}][{{ 'a\n\nb\n'|indent('> ', blank=true) }}][{{ d|tojson(indent=2)|indent(4) }}]", {"d": {"k": [1, 2]}})
    # String methods.
    add("string_methods", "{{ s.startswith('<tool') }} {{ s.endswith('>') }} {{ s.startswith(('x', '<')) }} {{ s.split('>') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} [{{ '\\n\\nx\\n'.strip('\\n') }}] [{{ '  x  '.lstrip() }}] [{{ '  x  '.rstrip() }}] {{ 'aXbX'.replace('X', '-') }} {{ 'ab'.upper() }} {{ 'AB'.lower() }} {{ 'abc'.find('c') }} {{ 'abca'.count('a') }} {{ '-'.join(['x', 'y']) }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }}", {"s": "<tool_response>x</tool_response>"})
    add("qwen_think_split", "{% set c = m.content %}{% if '</think>' in c %}{{ c.split('</think>')[-1].lstrip('\\n') }}|{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}{% endif %}", {"m": {"content": "<think>\nA\nB\n</think>\n\nC"}})
    add("method_on_wrong_type_error", "{{ [1].startswith('a') }}")
    # Globals.
    add("raise_exception", "{% if messages|length == 0 %}{{ raise_exception('No messages given!') }}{% endif %}", {"messages": []})
    add("range_and_dict", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b='x') }}")
    add("generation_tag", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}<{{ m.content }}>{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}", {"messages": msgs})
    add("print_tag", "{% print 'p' ~ 1 %}")
    # Patterns from other model families' templates (Llama 3, DeepSeek): shadowing context variables.
    add("shadow_context_variables", "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% if not tools is defined %}{% set tools = none %}{% endif %}{% if messages[0]['role'] == 'system' %}{% set system_message = messages[0]['content']|trim %}{% set messages = messages[1:] %}{% endif %}[{{ system_message }}]{% for m in messages %}{{ m.role }}:{{ m['content']|trim }};{% endfor %}{{ add_generation_prompt }}{{ tools is none }}{{ strftime_now is defined }}", {"messages": msgs})
    # Macros: defaults evaluated at call time, live template-level names, closures over loops, recursion.
    add("macro_params", "{% macro m(a, b='B', c=none) %}[{{ a }}|{{ b }}|{{ c }}]{% endmacro %}{{ m(1) }}{{ m(1, 2, 3) }}{{ m(c=5, a=0) }}{{ m() }}")
    add("macro_default_uses_param", "{% macro m(a, b=a ~ 'x') %}{{ b }}{% endmacro %}{{ m('q') }}{{ m('q', 'r') }}")
    add("macro_sees_live_globals", "{% set x = 1 %}{% macro m() %}{{ x }}{% set y = 3 %}{{ y }}{% endmacro %}{% set x = 2 %}{{ m() }}[{{ y }}]")
    add("macro_closure_in_loop", "{% for i in [1, 2] %}{% macro m() %}{{ i }}{{ loop is defined }}{% endmacro %}{{ m() }}{% endfor %}")
    add("macro_recursion", "{% macro m(x) %}{% if x > 0 %}{{ x }}{{ m(x - 1) }}{% endif %}{% endmacro %}{{ m(3) }}")
    add("macro_result_is_string", "{% macro m() %}  a  {% endmacro %}[{{ m() }}]{{ m() + 'b' }}{{ m()|length }}{{ m()|trim }}")
    add("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs|list }}{{ varargs|length }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}")
    add("macro_namespace_side_effect", "{% set ns = namespace(v=1) %}{% macro m() %}{% set ns.v = ns.v + 1 %}{% endmacro %}{{ m() }}{{ m() }}{{ ns.v }}")
    add("macro_whitespace", "{%- macro render(item, tag='x') -%}\n  <{{ tag }}>{{ item }}</{{ tag }}>\n{%- endmacro %}\n{% for i in items %}\n  {{ render(i) }}\n  {{- render(i, tag='y') }}\n{% endfor %}\n", {"items": ["a", "b"]})
    add("macro_too_many_args_error", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}")
    add("macro_unknown_kwarg_error", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}")
    add("macro_called_before_definition_error", "{{ m() }}{% macro m() %}x{% endmacro %}")
    # Markup from |safe and |e: `+` escapes the plain side, `~` does not.
    add("safe_and_escape", "{{ ('<a>'|safe) + '<b>' }}|{{ '<b>' + ('<a>'|safe) }}|{{ '<a>'|safe ~ '<b>' }}|{{ '<&>\\'\"'|e }}|{{ ('x'|safe)|length }}|{{ ('<'|safe).strip() + '<' }}|{{ d|tojson|safe }}|{{ ('<'|safe|upper) + '>' }}", {"d": {"k": "<v>"}})
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer-config", default=os.path.join(ROOT, ".carry/qwen3-tokenizer/tokenizer_config.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests/fixtures/chat"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open(args.tokenizer_config, encoding="utf-8") as f:
        config = json.load(f)
    template = config["chat_template"]
    with open(os.path.join(args.out, "qwen3_chat_template.jinja"), "w", encoding="utf-8", newline="") as f:
        f.write(template)

    env = make_env()
    specials = special_tokens(config)
    cases = []
    for name, messages, options in qwen3_conversations():
        kwargs = dict(options)
        # transformers: render(messages=, tools=, documents=, add_generation_prompt=, **special_tokens_map, **kwargs)
        context = {
            "messages": messages,
            "tools": kwargs.pop("tools", None),
            "documents": None,
            "add_generation_prompt": kwargs.pop("add_generation_prompt", True),
            **specials,
            **kwargs,
        }
        case = {"name": name, "messages": messages, "tools": context["tools"],
                "add_generation_prompt": context["add_generation_prompt"], "extra_context": specials}
        if "enable_thinking" in kwargs:
            case["enable_thinking"] = kwargs["enable_thinking"]
        case.update(render_case(env, template, context))
        cases.append(case)
    with open(os.path.join(args.out, "qwen3_cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
        f.write("\n")

    constructs = []
    for name, tmpl, ctx in construct_cases():
        case = {"name": name, "template": tmpl, "context": ctx}
        case.update(render_case(env, tmpl, ctx))
        constructs.append(case)
    with open(os.path.join(args.out, "construct_cases.json"), "w", encoding="utf-8") as f:
        json.dump(constructs, f, ensure_ascii=False, indent=1)
        f.write("\n")
    errors = sum("expected_error" in c for c in cases + constructs)
    print(f"wrote {len(cases)} Qwen3 conversations and {len(constructs)} construct templates "
          f"({errors} expected errors) to {args.out}")


if __name__ == "__main__":
    main()
