"""Reference DFlash loop (DFLASH.md section 4) around transformers' Qwen3ForCausalLM.

Deliberately simple: every target call is a full forward over the whole sequence
(no KV cache), so there is no cache bookkeeping to get wrong; causal attention makes
the rows of committed tokens identical to what an incremental engine computes.
Taps are read with forward hooks on the decoder layers: tap t = output of layer t
(the residual stream, before the next layer's norm), which equals transformers'
hidden_states[t + 1] for t < num_layers - 1 (checked by check_taps).
"""
import torch

from dflash_drafter import DFlashDrafter


def load_target(model_dir, device, dtype):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation="eager")
    return model.to(device).eval()


def decoder_layers(target):
    return target.model.layers


class TapRecorder:
    """Forward hooks that keep the outputs of the tapped decoder layers."""

    def __init__(self, target, tap_ids):
        self.tap_ids = list(tap_ids)
        self.out = {}
        layers = decoder_layers(target)
        for t in self.tap_ids:
            if not 0 <= t < len(layers):
                raise ValueError(f"tap id {t} outside the target's {len(layers)} layers")
        self.handles = [layers[t].register_forward_hook(self._hook(t)) for t in self.tap_ids]

    def _hook(self, t):
        def hook(module, args, output):
            self.out[t] = output[0] if isinstance(output, tuple) else output
        return hook

    def taps(self):
        """[batch, n, K*H] in tap-list order."""
        return torch.cat([self.out[t] for t in self.tap_ids], dim=-1)

    def remove(self):
        for h in self.handles:
            h.remove()


@torch.no_grad()
def target_forward(target, recorder, ids):
    """ids: list of token ids -> (logits [n, V], taps [n, K*H])."""
    dev = next(target.parameters()).device
    out = target(input_ids=torch.tensor([ids], device=dev), use_cache=False)
    return out.logits[0], recorder.taps()[0]


@torch.no_grad()
def check_taps(target, recorder, ids):
    """Max |hook tap - hidden_states[t+1]| over taps t < L-1 (the last layer's HF entry is normed)."""
    dev = next(target.parameters()).device
    out = target(input_ids=torch.tensor([ids], device=dev), use_cache=False, output_hidden_states=True)
    n_layers = len(decoder_layers(target))
    worst = 0.0
    for t in recorder.tap_ids:
        if t < n_layers - 1:
            worst = max(worst, (recorder.out[t][0] - out.hidden_states[t + 1][0]).abs().max().item())
    return worst


def sample_token(logits, temperature, generator):
    if temperature == 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def verify_block(rows, drafts, temperature, generator):
    """rows [B, V]: target logits after anchor, d1, .., d_{B-1}. Returns (accepted a, next token).

    Greedy: accept while d_i equals the target's argmax. Sampling: accept d with probability
    p_i(d); on the first rejection sample from p_i with d removed (lossless, since the
    drafts are argmax, i.e. a point-mass proposal).
    """
    for i, d in enumerate(drafts):
        row = rows[i]
        if temperature == 0:
            t = int(torch.argmax(row))
            if t != d:
                return i, t
            continue
        p = torch.softmax(row.double() / temperature, dim=-1)
        u = torch.rand((), generator=generator, device=p.device, dtype=torch.float64)
        if u < p[d]:
            continue
        p[d] = 0.0
        return i, int(torch.multinomial(p / p.sum(), 1, generator=generator))
    return len(drafts), sample_token(rows[len(drafts)], temperature, generator)


@torch.no_grad()
def dflash_generate(target, drafter, prompt_ids, max_new, temperature=0.0, eos_ids=(), generator=None,
                    num_spec=None):
    """Returns dict(tokens=generated ids, accepted=[a per step], tau)."""
    recorder = TapRecorder(target, drafter.target_layer_ids)
    try:
        embed = target.get_input_embeddings().weight
        lm_head = target.get_output_embeddings().weight
        n_spec = drafter.block_size - 1 if num_spec is None else num_spec
        ids = list(prompt_ids)
        logits, taps = target_forward(target, recorder, ids)
        ctx = drafter.project_context(taps.to(drafter.fc.weight.dtype))
        anchor = sample_token(logits[-1], temperature, generator)
        out, accepted, margins = [], [], []
        while True:
            out.append(anchor)
            if anchor in eos_ids or len(out) >= max_new:
                break
            p0 = len(ids)  # the anchor's position; ctx holds rows for positions 0..p0-1
            block = torch.tensor([anchor] + [drafter.mask_token_id] * n_spec, device=embed.device)
            dl = drafter.draft_logits(ctx, embed[block].to(ctx.dtype), p0, lm_head.to(ctx.dtype))
            drafts = dl.argmax(-1).tolist()
            logits, taps = target_forward(target, recorder, ids + [anchor] + drafts)
            a, nxt = verify_block(logits[p0:], drafts, temperature, generator)
            accepted.append(a)
            # How close the decisions of this step were (drafter rows 0..a, target rows 0..a):
            # a C++ engine computing in fp32 may only flip a decision whose margin is tiny.
            top_d = dl[:a + 1].topk(2, dim=-1).values if a < len(drafts) else dl.topk(2, dim=-1).values
            top_t = logits[p0:p0 + a + 1].topk(2, dim=-1).values
            margins.append((float((top_d[:, 0] - top_d[:, 1]).min()), float((top_t[:, 0] - top_t[:, 1]).min())))
            ids += [anchor] + drafts[:a]
            ctx = torch.cat([ctx, drafter.project_context(taps[p0:p0 + a + 1].to(ctx.dtype))], 0)
            stop = False
            for d in drafts[:a]:
                out.append(d)
                if d in eos_ids or len(out) >= max_new:
                    stop = True
                    break
            if stop:
                break
            anchor = nxt
        tau = sum(a + 1 for a in accepted) / max(1, len(accepted))
        return {"tokens": out, "accepted": accepted, "tau": tau,
                "min_drafter_margin": min((m[0] for m in margins), default=None),
                "min_target_margin": min((m[1] for m in margins), default=None)}
    finally:
        recorder.remove()


@torch.no_grad()
def plain_greedy(target, prompt_ids, max_new, eos_ids):
    """The target alone: one sequence, one token per full forward, argmax, stop at EOS.

    (transformers' batched generate with left padding was seen to differ from this at the
    first token, so the reference never batches prompts.)
    """
    dev = next(target.parameters()).device
    seq, out, margins = list(prompt_ids), [], []
    for _ in range(max_new):
        logits = target(input_ids=torch.tensor([seq], device=dev), use_cache=False).logits[0, -1]
        top = logits.topk(2).values
        margins.append(float(top[0] - top[1]))
        out.append(int(logits.argmax()))
        seq.append(out[-1])
        if out[-1] in eos_ids:
            break
    return {"tokens": out, "min_margin": min(margins)}


def load_drafter(path, device, dtype):
    return DFlashDrafter.load(path, device=device, dtype=dtype)
