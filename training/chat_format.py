"""The chat format shared by the corpus builder, the tokenizer trainer, the training recipes and the tests.

SpecScope's model family uses the Llama-3 chat layout:

    <|begin_of_text|><|start_header_id|>user<|end_header_id|>\\n\\nHello<|eot_id|><|start_header_id|>assistant...

CHAT_TEMPLATE is the Jinja text written to tokenizer_config.json (the published Llama-3 template, so both
transformers' apply_chat_template and the engine's Llama-3 recognizer handle it); render() is the same
rendering in plain Python, used where no tokenizer exists yet (corpus building, tokenizer training). A test
checks that the two agree.
"""

BOS = "<|begin_of_text|>"
EOT_TEXT = "<|end_of_text|>"
START_HEADER = "<|start_header_id|>"
END_HEADER = "<|end_header_id|>"
EOT = "<|eot_id|>"
SPECIAL_TOKENS = [BOS, EOT_TEXT, START_HEADER, END_HEADER, EOT]

CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}"
    "{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    " + message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)


def header(role: str) -> str:
    return f"{START_HEADER}{role}{END_HEADER}\n\n"


def render(messages, add_generation_prompt: bool = False) -> str:
    """Python twin of CHAT_TEMPLATE (Jinja's `trim` strips whitespace at both ends, as str.strip does)."""
    out = [BOS]
    for m in messages:
        out.append(header(m["role"]) + m["content"].strip() + EOT)
    if add_generation_prompt:
        out.append(header("assistant"))
    return "".join(out)


def render_with_spans(messages):
    """render() plus the character spans [start, end) that carry training loss for each assistant turn:
    the assistant's content and the <|eot_id|> that closes it (so the model learns to stop)."""
    text = BOS
    spans = []
    for m in messages:
        text += header(m["role"])
        body = m["content"].strip() + EOT
        if m["role"] == "assistant":
            spans.append((len(text), len(text) + len(body)))
        text += body
    return text, spans
