"""BERT-base MLM training on a GPU: tokens/s and model-FLOPs utilisation (issue 5, "Performance").

Goal: sequence 128, bf16 autocast, fused AdamW, flash attention (SDPA), MFU >= 40 % on an H200
(dense bf16 peak 989 TFLOP/s; issue 19).

The model is posgeom's encoder at the ``paper`` config for SST-2 (12 layers, width 768, 12 heads, MLP
3072, BERT's vocabulary, ``max_len`` 128, learned positions), trained by :func:`posgeom.models.train`
itself (its masking, scheduler, clipping, bf16 autocast and fused AdamW on CUDA) on random token ids.
``--compile`` sets ``TrainConfig(compile=True)`` (the model runs through :func:`torch.compile`).

``--sst2`` adds a second measurement on rows of SST-2-like lengths (mean ≈ 13 WordPiece tokens,
padded to 128) trained with ``padding="full"`` and with ``--padding`` (default ``bucket``): it reports
*real* tokens per second (mask 1), which is what the paper-scale cost model needs, and the speed-up
of not training on padding.

**Model FLOPs** per token (:func:`posgeom.models.model_flops_per_token`, PaLM's MFU convention: matmuls
only, training = 3 × forward): per layer :math:`2(4d^2 + 2 d d_{ff}) + 4 L d`, plus the MLM head
:math:`2(d^2 + dV)` on the fraction of tokens actually predicted (counted from the masks used).
MFU = tokens/s × FLOPs per token / peak. The peak is looked up from the device name (H100/H200 989,
A100 312 TFLOP/s dense bf16) or given with ``--peak-tflops``.

Timing: ``--warmup`` untimed steps (allocator, kernels, compilation), then ``--steps`` timed steps
between two ``torch.cuda.synchronize()`` calls. Optionally ``--hf`` times ``transformers.BertForMaskedLM``
with the same settings for comparison.

Runs:
  GPU:  ``python benchmarks/gpu_bert_base.py --out results/gpu_bert_base.json`` (about 2 minutes on an H200)
  CPU smoke test of the script itself (tiny model, a few steps): ``python benchmarks/gpu_bert_base.py --smoke --sst2``
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

#: Dense bf16 tensor-core peaks (TFLOP/s) by device-name fragment (vendor datasheets).
PEAK_BF16_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "L4": 121.0, "A10G": 70.0}


def peak_tflops(name: str) -> float | None:
    for key, value in PEAK_BF16_TFLOPS.items():
        if key in name:
            return value
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--compile", action="store_true", help="TrainConfig(compile=True): torch.compile the model")
    p.add_argument("--sst2", action="store_true", help="also time SST-2-like lengths, padded vs --padding")
    p.add_argument("--padding", choices=["trim", "bucket"], default="bucket", help="the padding of --sst2")
    p.add_argument("--hf", action="store_true", help="also time transformers.BertForMaskedLM (same settings)")
    p.add_argument("--peak-tflops", type=float, help="override the device's dense bf16 peak")
    p.add_argument("--smoke", action="store_true", help="tiny config on the CPU: checks the script runs")
    p.add_argument("--out", help="write the figures and the hardware to this JSON file")
    args = p.parse_args()

    import torch

    from posgeom.models import Callback, TokenData, TrainConfig, build_model, get_config, model_flops_per_token, train

    if args.smoke:
        device = "cpu"
        cfg = get_config("quick", vocab_size=2000, d_model=64, n_layers=2, n_heads=4, d_ff=128, max_len=32)
        args.batch_size, args.seq, args.steps, args.warmup = 8, 32, 3, 1
        precision = "fp32"
    else:
        if not torch.cuda.is_available():
            print("no CUDA device here: run on a GPU, or use --smoke to check the script on the CPU", file=sys.stderr)
            return 2
        device = "cuda"
        cfg = get_config("paper", "sst2", max_len=args.seq)
        precision = "bf16"
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    name = torch.cuda.get_device_name(0) if device == "cuda" else platform.processor() or "cpu"
    peak = args.peak_tflops or (peak_tflops(name) if device == "cuda" else None)

    steps = args.warmup + args.steps
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, cfg.vocab_size - 1, (args.batch_size * steps, args.seq), generator=g)
    ids[:, 0], ids[:, -1] = 101, 102

    class Clock(Callback):
        """Synchronise and read the clock after the warm-up and after the last step; count predicted tokens."""

        def on_step_end(self, state):
            if state.step == args.warmup:
                if device == "cuda":
                    torch.cuda.synchronize()
                self.t0 = time.perf_counter()

        def on_train_end(self, state):
            if device == "cuda":
                torch.cuda.synchronize()
            self.t1 = time.perf_counter()

    def run_posgeom(data=None, padding: str = "full") -> dict:
        model = build_model(cfg, "mlm", seed=0)
        clock = Clock()
        config = TrainConfig(batch_size=args.batch_size, max_steps=steps, lr=1e-4, warmup_steps=steps // 10,
                             device=device, precision=precision, progress=False, log_every=steps,
                             compile=args.compile, padding=padding, checkpoint_seconds=None)
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        result = train(model, data if data is not None else TokenData(ids), config, callbacks=[clock])
        return {"seconds": clock.t1 - clock.t0, "final_loss": result.losses[-1],
                "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None}

    def sst2_like() -> tuple:
        """Rows of SST-2-like lengths padded to the sequence, and the real tokens of the timed steps."""
        from posgeom.models.batches import epoch_batches, sequence_lengths

        n = args.batch_size * steps
        gl = torch.Generator().manual_seed(1)
        # mean about 13, a geometric tail, at most 66 ([CLS] and [SEP] included)
        u = torch.rand(n, generator=gl)
        lengths = (3 + torch.floor(torch.log1p(-u) / torch.log(torch.tensor(1 - 1 / 10.5)))).long()
        lengths = lengths.clamp(max=min(66, args.seq))
        mask = (torch.arange(args.seq)[None, :] < lengths[:, None]).long()
        rows = ids[:n] * mask
        rows[torch.arange(n), lengths - 1] = 102
        data = TokenData(rows, mask)
        real = {}
        for padding in ("full", args.padding):
            order = epoch_batches(n, args.batch_size, seed=0, epoch=0, padding=padding, lengths=sequence_lengths(mask))
            real[padding] = sum(int(mask[i].sum()) for i in order[args.warmup:steps])
        return data, real, float(lengths.float().mean())

    def run_hf() -> dict:
        from transformers import BertConfig, BertForMaskedLM

        from posgeom.models.batches import mask_tokens

        hf_cfg = BertConfig(vocab_size=cfg.vocab_size, hidden_size=cfg.d_model, num_hidden_layers=cfg.n_layers,
                            num_attention_heads=cfg.n_heads, intermediate_size=cfg.d_ff,
                            max_position_embeddings=cfg.max_len, attn_implementation="sdpa")
        torch.manual_seed(0)
        model = BertForMaskedLM(hf_cfg).to(device).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6, fused=device == "cuda")
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        for step in range(steps):
            if step == args.warmup:
                if device == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
            batch = ids[step * args.batch_size:(step + 1) * args.batch_size]
            inputs, labels = mask_tokens(batch, vocab_size=cfg.vocab_size, generator=torch.Generator().manual_seed(step))
            with torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16"):
                loss = model(input_ids=inputs.to(device), labels=labels.to(device)).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()
        return {"seconds": time.perf_counter() - t0, "final_loss": loss.item(),
                "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None}

    # fraction of positions that carry an MLM label: 15 % of the non-special ones
    fraction = 0.15 * (args.seq - 2) / args.seq
    flops_tok = model_flops_per_token(cfg, args.seq, mlm_fraction=fraction)
    rows = {"posgeom": run_posgeom()}
    sst2 = None
    if args.sst2:
        data, real, mean_len = sst2_like()
        padded = run_posgeom(data, "full")
        fitted = run_posgeom(data, args.padding)
        sst2 = {"mean_length": mean_len, "padding": args.padding,
                "full": {**padded, "real_tokens_per_s": real["full"] / padded["seconds"]},
                args.padding: {**fitted, "real_tokens_per_s": real[args.padding] / fitted["seconds"]}}
        sst2["speedup"] = sst2[args.padding]["real_tokens_per_s"] / sst2["full"]["real_tokens_per_s"]
    if args.hf:
        rows["transformers"] = run_hf()
        # Hugging Face computes the vocabulary projection at every position
        hf_flops_tok = model_flops_per_token(cfg, args.seq, mlm_fraction=None)
    tokens = args.steps * args.batch_size * args.seq
    report = {
        "device": name, "torch": torch.__version__, "cuda": torch.version.cuda, "precision": precision,
        "compile": args.compile, "batch_size": args.batch_size, "seq": args.seq, "timed_steps": args.steps,
        "config": {k: v for k, v in cfg.to_params().items() if k != "position_options"},
        "model_flops_per_token": flops_tok, "peak_tflops": peak, "smoke": args.smoke, "results": {},
        "sst2_like": sst2,
    }
    for key, row in rows.items():
        tps = tokens / row["seconds"]
        per_tok = flops_tok if key == "posgeom" else hf_flops_tok
        mfu = tps * per_tok / (peak * 1e12) if peak else None
        report["results"][key] = {**row, "tokens_per_s": tps, "achieved_tflops": tps * per_tok / 1e12, "mfu": mfu}
    print(f"{name} | {precision} | batch {args.batch_size} x seq {args.seq} | compile={args.compile}")
    print(f"{'model':14s}{'tokens/s':>12s}{'TFLOP/s':>10s}{'MFU':>8s}{'peak mem GiB':>14s}{'final loss':>12s}")
    for key, r in report["results"].items():
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "n/a"
        mem = f"{r['peak_mem_gib']:.1f}" if r["peak_mem_gib"] is not None else "n/a"
        print(f"{key:14s}{r['tokens_per_s']:12.0f}{r['achieved_tflops']:10.1f}{mfu:>8s}{mem:>14s}{r['final_loss']:12.3f}")
    if sst2 is not None:
        print(f"SST-2-like rows (mean length {sst2['mean_length']:.1f}, padded to {args.seq}): real tokens/s "
              f"{sst2['full']['real_tokens_per_s']:.0f} padded, {sst2[args.padding]['real_tokens_per_s']:.0f} "
              f"with padding={args.padding!r} ({sst2['speedup']:.2f}x)")
    if args.out:
        from pathlib import Path

        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
