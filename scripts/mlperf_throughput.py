#!/usr/bin/env python3
"""Training throughput of Graphcore's MLPerf Training submissions, from their MLLOG result files.

Reads result_N.txt files (paths or folders on the command line, or
--repo GITDIR --system NAME --benchmark bert|resnet through `git show`) and counts the work of
each training interval exactly as the benchmark code does. Evaluation is never counted (it lies
between BERT blocks and after the ResNet training block), and the first interval of every run
(first BERT block, first ResNet epoch) is left out: it holds the first device executions and, for
ResNet, the first pass over a host-side tf.data cache.

Sources read (the results repositories, Graphcore/ folder):
  v1.1 = github.com/mlcommons/training_results_v1.1 @ ebe92f81f7a69255a3b0a907595d8be623d75ec6
  v2.0 = github.com/mlcommons/training_results_v2.0 @ 8437fbb78349aa3c3054aeccb1d47d2a315a80e7
  POPART = benchmarks/bert/implementations/popart/bert.py, PADDLE = .../paddlepaddle/bert.py,
  TF = benchmarks/resnet/implementations/tensorflow/train.py. Line numbers are "v1.1:L / v2.0:L".

BERT (PopART and PaddlePaddle), one interval = one MLLOG block_start .. block_stop
  B1  A step is one session.run; with batches_per_step 1 (every submitted config) it processes
      one global batch of packs: batch_size x gradient_accumulation_factor x replication_factor
      (x popdist_size) packs of 512 tokens. The logged global_batch_size G counts nominal
      sequences: that pack count times avg_seq_per_pack (POPART Iteration.__init__
      v1.1:876-881 / v2.0:918-923; PADDLE 155-161; avg_seq_per_pack is 2 in every config).
      Packs per step P = G / avg_seq_per_pack (--avg-seq-per-pack, default 2).
  B2  Evaluation triggers T_j = j x I with I = int((0.05*(230.23*G + 3e6)) // 25000) * 25000
      (POPART v1.1:888-890 / v2.0:930-932; PADDLE 166-171). The eval_accuracy after block j
      logs epoch_num = T_j (POPART v1.1:1316 / v2.0:1377); this script checks that rule.
  B3  The step counter is incremented inside bert_process_data, before the trigger check
      (POPART `iteration.count += 1` v1.1:1154 / v2.0:1214, check v1.1:1236-1238 /
      v2.0:1297-1299; PADDLE 776 then 787-790). Two counting modes:
      global: `count * G > T_j` (POPART when launched by poprun, i.e. popdist; PADDLE POD>=128).
              Block j therefore ends after exactly K_j = T_j // G + 1 steps in total, and
              holds K_j - K_{j-1} steps (K_0 = 0): exact.
      local:  `total_sequences_so_far > T_j`, the actual sequences processed, counted per step
              as sum over packs of max(input_mask) (POPART add_stats v1.1:934-941 /
              v2.0:983-990). PADDLE adds the step's sequences only after the check
              (flush_total_sequences, 976), so a block ends one step later; its train_samples
              then omits the last step. With c = P x r the actual sequences of one step
              (r of rule B4), PopART ends block 1 at E_1 in (T_1, T_1+c] and logs
              train_samples = E_N; Paddle ends it at E_1 in (T_1+c, T_1+2c] and logs
              train_samples = E_N - c. In both codes the actual sequences of blocks 2..N are
              therefore train_samples - T_1 - c/2, to within +-c/2 (about 0.06% of a run).
              A single block j >= 2 holds T_j - T_{j-1} +- c sequences (its step count is
              known only to +-1 step).
      Which mode ran follows from the launch scripts: POPART create_submission.py wraps only
      pod128 (v1.1) and pod128/pod256 (v2.0) in poprun; PADDLE tests `args.POD >= 128`.
      So: global iff the pod size (from submission_platform or the file path) is >= 128;
      --counting overrides. The result is checked against train_samples (rule bert.counting).
  B4  train_samples (logged at the end, POPART v1.1:1544-1547 / v2.0:1612-1626) is the total
      of actual sequences. In global mode actual sequences per pack of the run
      r = train_samples / (K_N x P); a block's actual sequences are its packs x r.
      In local mode packs are not logged; packs = sequences / r with r the dataset constant
      DATASET_SEQ_PER_PACK (--seq-per-pack): the mean of r over the 40 global-mode runs of
      both rounds (v1.1 pod128 closed+open, v2.0 pod128+pod256), 2.0368 (s.d. 0.0007 between
      runs); every BERT config of both rounds (and PADDLE) reads the same packed dataset,
      jan2020_three_seq_per_pack_with_duplications.
  B5  Throughput of a run = work in blocks 2..N / their summed time (time_ms of block_stop
      minus block_start). Reported: actual sequences/s, packs/s, and nominal sequences/s
      (packs x avg_seq_per_pack, the unit of the logged global_batch_size), plus the median
      of the per-block actual-sequence rates. In global mode block 1's actual sequences are
      taken at the run's mean r; the error this leaves is below 0.01%.

ResNet-50 (TF1), one interval = one MLLOG epoch_start .. epoch_stop inside the training block
  R1  G = global_batch_size = micro_batch_size x GA x replicas x instances (TF v1.1:1043 /
      v2.0:1069) images per iteration (one weight update); N = train_samples = NUM_IMAGES =
      1281167 (TF v1.1:602-604 / v2.0:607-609; Datasets/data.py v1.1:28 / v2.0:29).
  R2  iterations_per_epoch = N // G; iterations = N x epochs // G; log_freq =
      iterations_per_epoch // logs_per_epoch; iterations_per_step S = log_freq if log_freq <
      batches_per_step else log_freq // round(log_freq / batches_per_step)
      (TF v1.1:600-621 / v2.0:605-626). One session.run = one step = S iterations = S x G
      images. logs_per_epoch = 5 (configs.yml mk2_resnet50_mlperf_pod16, inherited by every
      *_lars config), batches_per_step = 1000 (argparse default, TF v1.1:1121 / v2.0:1147).
  R3  The loop runs while i < iterations, i += S (TF v1.1:745,861 / v2.0:759,880): the last
      step overshoots; steps = ceil(iterations / S). The training dataset is cached,
      shuffled and repeated before it is batched with drop_remainder (Datasets/data.py
      v1.1:175-178,221-227 / v2.0:191-194,234-239), so every step holds exactly S x G images
      and drop_remainder never drops any; an "epoch" is a step count.
  R4  Before step s the code computes epoch = G x (s+1) x S / N and, when floor(epoch) equals
      the current epoch number (and round(epoch) is not the final epoch), logs epoch_stop /
      epoch_start (TF v1.1:746,770-776 / v2.0:760,786-792). So epoch e+1 starts at the first
      step s with (s+1) x S x G >= e x N; epoch 1 starts at step 0; the last epoch ends after
      the last step (TF v1.1:862-864 / v2.0:881-883). Images in epoch e = its steps x S x G.
  R5  A checkpoint is written after a step when ckpt_this_step (TF v1.1:755-763 /
      v2.0:770-779) with iterations_per_ckpt = iterations_per_epoch x epochs_per_ckpt (4, from
      configs.yml mk2_resnet50_mlperf_pod16) and ckpt_offset = ckpt_epochs_offset x
      iterations_per_epoch; v1.1 configs set ckpt_epochs_offset, v2.0 configs do not and the
      code then uses epochs % epochs_per_ckpt (v2.0:637-644). The save is timed inside the
      epoch holding that step. Check: the logged eval epoch_num values equal
      round(G x iteration / N) of these checkpoints (validation.py v1.1:411,253 /
      v2.0:414,249); it holds for all 40 submitted runs.
  R6  Throughput of a run = images of epochs 2..N / their summed time ("all epochs"); the
      same without the epochs that hold a checkpoint save ("training", the headline); and
      without those and the epoch after each ("steady"). The last is an observation, not a
      rule of the code: in the submitted logs the epoch after a checkpoint epoch is also slower
      (pod128/256 by about 4-10%; the logs do not show why). Also the median of
      per-epoch rates. The per-submission values of R2/R5 are in RESNET_CONFIGS, keyed by the
      logged hyper-parameters; other logs need the flags.

Errors in the input exit with status 2 and a message naming the file, the place
(line / JSON pointer), a rule id [area.rule] and what to do.
"""

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

DATASET_SEQ_PER_PACK = 2.0368   # rule B4
AVG_SEQ_PER_PACK = 2            # rule B1
IMAGENET_TRAIN_IMAGES = 1281167  # rule R1

# Rule R2/R5 values per ResNet submission, keyed by the hyper-parameters the log states:
# (submission_platform, global_batch_size, gradient_accumulation_steps, epoch_count,
#  lars_opt_base_learning_rate).
RESNET_CONFIGS = {
    ("POD16", 3200, 10, 38, 10.72): dict(round="v1.1", config="mk2_resnet50_mlperf_pod16_lars",
                                          ckpt_epochs_offset=2),
    ("POD64", 3840, 3, 38, 12.51): dict(round="v1.1", config="mk2_resnet50_mlperf_pod64_lars",
                                         ckpt_epochs_offset=2),
    ("POD128", 5120, 2, 41, 11.2): dict(round="v1.1", config="mk2_resnet50_mlperf_pod128_lars",
                                         ckpt_epochs_offset=1),
    ("POD256", 10240, 2, 45, 17.2): dict(round="v1.1", config="mk2_resnet50_mlperf_pod256_lars",
                                          ckpt_epochs_offset=1),
    ("POD16", 3520, 10, 38, 10.72): dict(round="v2.0", config="mk2_resnet50_mlperf_pod16_lars",
                                          ckpt_epochs_offset=None),
    ("POD64", 5120, 4, 40, 14.225): dict(round="v2.0", config="mk2_resnet50_mlperf_pod64_lars",
                                          ckpt_epochs_offset=None),
    ("POD128", 5120, 2, 41, 12.1): dict(round="v2.0", config="mk2_resnet50_mlperf_pod128_lars",
                                         ckpt_epochs_offset=None),
    ("POD256", 10240, 2, 45, 20.2): dict(round="v2.0", config="mk2_resnet50_mlperf_pod256_lars",
                                          ckpt_epochs_offset=None),
}
RESNET_DEFAULTS = dict(logs_per_epoch=5, batches_per_step=1000, epochs_per_ckpt=4)


class InputError(Exception):
    def __init__(self, source, place, rule, what, todo):
        super().__init__(f"{source}: {place}: [{rule}] {what}; {todo}")


# ---------------------------------------------------------------- MLLOG reading

def parse_mllog(text, source):
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        at = line.find(":::MLLOG")
        if at < 0:
            continue
        try:
            event = json.loads(line[at + len(":::MLLOG"):], parse_constant=reject_constant)
        except json.JSONDecodeError as err:
            raise InputError(source, f"line {number}", "mllog.json", f"not JSON ({err.msg})",
                             "repair or remove the line")
        if not isinstance(event, dict):
            raise InputError(source, f"line {number}", "mllog.json", "not a JSON object",
                             "repair or remove the line")
        for key, kind in (("time_ms", (int, float)), ("key", str), ("event_type", str)):
            if (not isinstance(event.get(key), kind) or isinstance(event.get(key), bool)
                    or (key == "time_ms" and not math.isfinite(event[key]))):
                raise InputError(source, f"line {number} /{key}", "mllog.field",
                                 f"missing or of the wrong type", "every MLLOG event needs it")
        metadata = event.get("metadata", {})
        event["metadata"] = metadata if isinstance(metadata, dict) else {}
        event["line"] = number
        events.append(event)
    if not events:
        raise InputError(source, "line 1", "mllog.empty", "no ':::MLLOG' lines",
                         "give an MLPerf result_N.txt file")
    return events


def reject_constant(name):
    raise json.JSONDecodeError(f"{name} is not a number MLLOG may hold", name, 0)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def scalar(value):
    # distributed runs log some counts as one-element lists (v1.1 pod128)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value


def point(events, key, source, kind=(int, float), required=True):
    for event in events:
        if event["key"] == key and event["event_type"] == "POINT_IN_TIME":
            value = scalar(event.get("value"))
            if isinstance(value, bool) or not isinstance(value, kind) or (
                    isinstance(value, float) and not math.isfinite(value)):
                raise InputError(source, f"line {event['line']} /value", "mllog.key",
                                 f"{key} is {value!r}", "expected a number")
            return value
    if required:
        raise InputError(source, f"key {key}", "mllog.key", "not logged",
                         "the derivation needs it; is this a Graphcore MLPerf log?")
    return None


def whole(value, name, source, low, high):
    if value != int(value) or not low <= value <= high:
        raise InputError(source, f"key {name}", "range", f"{value} is not a whole number in "
                         f"[{low}, {high}]", "check the log")
    return int(value)


def intervals(events, start_key, stop_key, source, meta_key=None):
    """[(start_event, stop_event)] in log order; nesting and unmatched markers are errors."""
    out, opened = [], None
    for event in events:
        if event["key"] == start_key:
            if opened is not None:
                raise InputError(source, f"line {event['line']}", "mllog.blocks",
                                 f"{start_key} before the previous one stopped", "repair the log")
            opened = event
        elif event["key"] == stop_key:
            if opened is None:
                raise InputError(source, f"line {event['line']}", "mllog.blocks",
                                 f"{stop_key} without {start_key}", "repair the log")
            if meta_key and opened["metadata"].get(meta_key) != event["metadata"].get(meta_key):
                raise InputError(source, f"line {event['line']} /metadata/{meta_key}",
                                 "mllog.blocks", f"{stop_key} does not match its {start_key}",
                                 "repair the log")
            if not event["time_ms"] > opened["time_ms"]:
                raise InputError(source, f"line {event['line']} /time_ms", "range",
                                 f"{stop_key} not after {start_key}", "repair the log")
            out.append((opened, event))
            opened = None
    return out, opened


# ---------------------------------------------------------------- BERT (rules B1-B5)

def bert_eval_interval(gbs):
    return int((0.05 * (230.23 * gbs + 3000000)) // 25000) * 25000


def pod_size(platform, source):
    for text in (platform or "", source):
        found = re.search(r"pod(\d+)", text, re.IGNORECASE)
        if found:
            return int(found.group(1))
    return None


def bert_run(events, source, counting="auto", avg_seq_per_pack=AVG_SEQ_PER_PACK,
             seq_per_pack=DATASET_SEQ_PER_PACK):
    gbs = whole(point(events, "global_batch_size", source), "global_batch_size", source, 1, 10**7)
    if gbs % avg_seq_per_pack:
        raise InputError(source, "key global_batch_size", "bert.packs",
                         f"{gbs} is not a multiple of avg_seq_per_pack {avg_seq_per_pack}",
                         "pass the config's --avg-seq-per-pack")
    packs_per_step = gbs // avg_seq_per_pack
    train_samples = point(events, "train_samples", source)
    platform = point(events, "submission_platform", source, kind=str, required=False)
    blocks, unfinished = intervals(events, "block_start", "block_stop", source, "first_epoch_num")
    evals = [e for e in events if e["key"] == "eval_accuracy"]
    if len(blocks) < 2:
        raise InputError(source, "block_stop", "bert.blocks", f"{len(blocks)} complete blocks",
                         "need at least two (the first is left out)")
    if len(evals) < len(blocks):
        raise InputError(source, "eval_accuracy", "bert.triggers",
                         f"{len(evals)} evaluations for {len(blocks)} blocks",
                         "every block ends at an evaluation trigger")
    interval = bert_eval_interval(gbs)
    triggers = []
    for j, event in enumerate(evals[:len(blocks)], 1):
        trigger = event["metadata"].get("epoch_num")
        if trigger != j * interval:
            raise InputError(source, f"line {event['line']} /metadata/epoch_num", "bert.triggers",
                             f"{trigger!r}, rule B2 gives {j * interval} for G={gbs}",
                             "not a Graphcore BERT log of these rounds")
        triggers.append(trigger)
    if counting == "auto":
        size = pod_size(platform, source)
        if size is None:
            raise InputError(source, "key submission_platform", "bert.counting",
                             f"no pod size in {platform!r} or the path",
                             "pass --counting global|local (rule B3)")
        counting = "global" if size >= 128 else "local"
    total_steps = triggers[-1] // gbs + 1
    if counting == "global":
        ratio = train_samples / (total_steps * packs_per_step)
        if not 1.0 <= ratio <= 3.0:
            raise InputError(source, "key train_samples", "bert.counting",
                             f"{train_samples} gives {ratio:.4f} sequences per pack over "
                             f"{total_steps} steps of {packs_per_step} packs",
                             "not global counting; try --counting local")
    else:
        if not triggers[-1] < train_samples <= triggers[-1] + 1.1 * gbs:
            raise InputError(source, "key train_samples", "bert.counting",
                             f"{train_samples} is not within one step above the last trigger "
                             f"{triggers[-1]}", "not local counting; try --counting global")
        ratio = seq_per_pack
    step_sequences = packs_per_step * ratio   # c of rule B3: actual sequences in one step
    block_rows, previous_steps = [], 0
    for j, ((start, stop), trigger) in enumerate(zip(blocks, triggers), 1):
        seconds = (stop["time_ms"] - start["time_ms"]) / 1000.0
        row = {"block": j, "seconds": seconds}
        if counting == "global":
            steps = trigger // gbs + 1 - previous_steps
            previous_steps += steps
            row.update(steps=steps, packs=steps * packs_per_step, nominal_sequences=steps * gbs,
                       sequences=steps * packs_per_step * ratio, sequences_halfwidth=0.0)
        else:
            # a block ends within a step of its trigger; the first block of a PADDLE run one
            # step later (rule B3), so its bound is two steps
            earlier = triggers[j - 2] if j > 1 else 0
            row.update(steps=None, packs=None, nominal_sequences=None,
                       sequences=trigger - earlier,
                       sequences_halfwidth=step_sequences * (1 if j > 1 else 2))
        row["sequences_per_s"] = row["sequences"] / seconds
        block_rows.append(row)
    seconds = sum(r["seconds"] for r in block_rows[1:])
    if counting == "global":
        packs = sum(r["packs"] for r in block_rows[1:])
        sequences, halfwidth = packs * ratio, 0.0
    else:
        sequences = train_samples - triggers[0] - step_sequences / 2
        halfwidth = step_sequences / 2
        packs = sequences / ratio
    return {
        "file": source, "benchmark": "bert", "submission_platform": platform,
        "seed": point(events, "seed", source, required=False),
        "global_batch_size": gbs, "packs_per_step": packs_per_step, "counting": counting,
        "eval_interval": interval, "blocks_completed": len(blocks),
        "unfinished_block": unfinished is not None, "train_samples": train_samples,
        "total_steps": total_steps if counting == "global" else None,
        "seq_per_pack": ratio, "seq_per_pack_source": "run" if counting == "global" else "dataset",
        "blocks": block_rows,
        "seconds": seconds, "sequences": sequences, "sequences_halfwidth": halfwidth,
        "sequences_per_s": sequences / seconds, "sequences_per_s_halfwidth": halfwidth / seconds,
        "packs_per_s": packs / seconds,
        "nominal_sequences_per_s": packs * avg_seq_per_pack / seconds,
        "median_block_sequences_per_s":
            statistics.median(r["sequences_per_s"] for r in block_rows[1:]),
        "throughput": sequences / seconds, "unit": "sequences/s",
    }


# ---------------------------------------------------------------- ResNet (rules R1-R6)

def resnet_schedule(images, gbs, epochs, logs_per_epoch, batches_per_step, epochs_per_ckpt,
                    ckpt_epochs_offset):
    """Steps per epoch, iterations per step and checkpoint steps, as TF train.py runs them."""
    per_epoch = images // gbs
    iterations = images * epochs // gbs
    log_freq = per_epoch // logs_per_epoch
    if log_freq < batches_per_step:
        per_step = log_freq
    else:
        per_step = log_freq // int(round(log_freq / batches_per_step))
    steps = -(-iterations // per_step)
    epoch_of_step, current = [], 1
    for s in range(steps):
        epoch_value = gbs * (s + 1) * per_step / images
        if math.floor(epoch_value) == current and int(round(epoch_value)) != int(round(epochs)):
            current = round(epoch_value) + 1
        epoch_of_step.append(current)
    ckpt_steps = []
    if epochs_per_ckpt:
        per_ckpt = per_epoch * epochs_per_ckpt
        offset = ckpt_epochs_offset if ckpt_epochs_offset is not None else epochs % epochs_per_ckpt
        offset *= per_epoch
        for s in range(steps):
            i = s * per_step
            due = (i >= offset - per_step and ((i - offset) // per_ckpt < (i + per_step - offset) // per_ckpt
                                               or i + per_step >= iterations))
            epoch_value = gbs * (i + per_step) / images
            if due and round(epoch_value) == epochs and i + per_step < iterations:
                due = False   # "avoid early checkpointing"
            if due:
                ckpt_steps.append(s)
    return per_step, epoch_of_step, ckpt_steps


def resnet_run(events, source, overrides):
    gbs = whole(point(events, "global_batch_size", source), "global_batch_size", source, 1, 10**7)
    images = whole(point(events, "train_samples", source), "train_samples", source, 1, 10**9)
    ga = point(events, "gradient_accumulation_steps", source, required=False)
    lr = point(events, "lars_opt_base_learning_rate", source, required=False)
    platform = point(events, "submission_platform", source, kind=str, required=False)
    blocks, _ = intervals(events, "block_start", "block_stop", source, "first_epoch_num")
    if not blocks:
        raise InputError(source, "block_start", "resnet.blocks", "no complete block",
                         "the training block is missing")
    epochs = blocks[0][0]["metadata"].get("epoch_count")
    if not is_number(epochs) or epochs != int(epochs) or not 1 <= epochs <= 1000:
        raise InputError(source, f"line {blocks[0][0]['line']} /metadata/epoch_count", "range",
                         f"{epochs!r}", "expected the whole number of training epochs")
    epochs = int(epochs)
    known = (RESNET_CONFIGS.get((platform, gbs, ga, epochs, lr))
             if images == IMAGENET_TRAIN_IMAGES else None)
    settings = dict(RESNET_DEFAULTS)
    settings["ckpt_epochs_offset"] = known["ckpt_epochs_offset"] if known else None
    given = {k: v for k, v in overrides.items() if v is not None}
    if not known and not {"logs_per_epoch", "batches_per_step"} <= set(given):
        raise InputError(source, "keys submission_platform/global_batch_size/epoch_count",
                         "resnet.config", f"({platform}, {gbs}, {ga}, {epochs}, {lr}) is not a "
                         "known submission", "pass --logs-per-epoch and --batches-per-step "
                         "(and --epochs-per-ckpt/--ckpt-epochs-offset) from its configs.yml")
    settings.update(given)
    if images // gbs // settings["logs_per_epoch"] < 1:
        raise InputError(source, "key global_batch_size", "resnet.config",
                         f"{images} // {gbs} iterations per epoch is below logs_per_epoch "
                         f"{settings['logs_per_epoch']}", "check --logs-per-epoch")
    per_step, epoch_of_step, ckpt_steps = resnet_schedule(
        images, gbs, epochs, settings["logs_per_epoch"], settings["batches_per_step"],
        settings["epochs_per_ckpt"], settings["ckpt_epochs_offset"])
    training_start, training_stop = blocks[0]
    epoch_marks, _ = intervals([e for e in events if training_start["time_ms"] <= e["time_ms"]
                                <= training_stop["time_ms"]], "epoch_start", "epoch_stop",
                               source, "epoch_num")
    numbers = [start["metadata"].get("epoch_num") for start, _ in epoch_marks]
    if numbers != list(range(1, epochs + 1)) or epoch_of_step[-1] != epochs:
        raise InputError(source, "epoch_start /metadata/epoch_num", "resnet.epochs",
                         f"logged epochs {numbers[:3]}..{numbers[-3:]} (of {len(numbers)}), rule R4 "
                         f"gives 1..{epoch_of_step[-1]}", "check the schedule settings")
    ckpt_epochs = {epoch_of_step[s] for s in ckpt_steps}
    expected_evals = sorted({round(gbs * (s + 1) * per_step / images) for s in ckpt_steps})
    logged_evals = sorted({e["metadata"]["epoch_num"] for e in events if e["key"] == "eval_start"
                           and is_number(e["metadata"].get("epoch_num"))})
    rows = []
    for (start, stop), number in zip(epoch_marks, numbers):
        steps = epoch_of_step.count(number)
        seconds = (stop["time_ms"] - start["time_ms"]) / 1000.0
        rows.append({"epoch": number, "steps": steps, "images": steps * per_step * gbs,
                     "seconds": seconds, "images_per_s": steps * per_step * gbs / seconds,
                     "checkpoint": number in ckpt_epochs})

    def rate(selected):
        total = sum(r["seconds"] for r in selected)
        return sum(r["images"] for r in selected) / total if total else None

    later = rows[1:]
    clean = [r for r in later if not r["checkpoint"]]
    steady = [r for r in clean if r["epoch"] - 1 not in ckpt_epochs]
    return {
        "file": source, "benchmark": "resnet", "submission_platform": platform,
        "seed": point(events, "seed", source, required=False), "global_batch_size": gbs,
        "config": known["config"] if known else None, "round": known["round"] if known else None,
        "settings": settings, "iterations_per_step": per_step, "images_per_step": per_step * gbs,
        "epochs": epochs, "checkpoint_epochs": sorted(ckpt_epochs),
        "eval_epochs_match_checkpoints": expected_evals == logged_evals if logged_evals else None,
        "epoch_rows": rows,
        "images_per_s_all_epochs": rate(later),
        "images_per_s_training": rate(clean),
        "images_per_s_steady": rate(steady),
        "median_epoch_images_per_s": statistics.median(r["images_per_s"] for r in later)
        if later else None,
        "throughput": rate(clean), "unit": "images/s",
    }


# ---------------------------------------------------------------- inputs, summary, output

def read_git(repo, args):
    try:
        return subprocess.run(["git", "-C", repo] + args, check=True, capture_output=True,
                              text=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise InputError(repo, " ".join(args), "repo.git", f"git failed ({err})",
                         "give a git directory holding the results repository")


def gather_sources(options):
    """[(label, text)] of every result file asked for."""
    out = []
    if options.repo:
        names = read_git(options.repo, ["ls-tree", "-r", "--name-only", "HEAD", "Graphcore/results"])
        pattern = re.compile(r"^Graphcore/results/([^/]+)/([^/]+)/result_\d+\.txt$")
        for name in sorted(names.split(), key=natural_key):
            found = pattern.match(name)
            if not found or found.group(2) != options.benchmark:
                continue
            if options.system and found.group(1) not in options.system:
                continue
            out.append((f"{options.repo}:{name}", read_git(options.repo, ["show", f"HEAD:{name}"])))
        if not out:
            raise InputError(options.repo, "Graphcore/results", "repo.results",
                             f"no {options.benchmark} results for {options.system or 'any system'}",
                             "check --system and --benchmark")
    for path in options.paths:
        files = [os.path.join(path, n) for n in sorted(os.listdir(path), key=natural_key)
                 if re.fullmatch(r"result_\d+\.txt", n)] if os.path.isdir(path) else [path]
        if not files:
            raise InputError(path, "folder", "input.files", "no result_N.txt in it",
                             "give result files or their folder")
        for name in files:
            try:
                with open(name, encoding="utf-8") as handle:
                    out.append((name, handle.read()))
            except (OSError, UnicodeDecodeError) as err:
                raise InputError(name, "file", "input.read", f"cannot be read ({err})",
                                 "give a readable text file")
    return out


def natural_key(text):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def system_of(label):
    found = re.search(r"results/([^/]+)/[^/]+/result_\d+\.txt$", label)
    return found.group(1) if found else os.path.dirname(label) or "."


def summarise(runs):
    systems = {}
    for run in runs:
        systems.setdefault(system_of(run["file"]), []).append(run)
    out = []
    for name, members in systems.items():
        row = {"system": name, "benchmark": members[0]["benchmark"], "runs": len(members),
               "unit": members[0]["unit"]}
        keys = (["sequences_per_s", "packs_per_s", "nominal_sequences_per_s"]
                if row["benchmark"] == "bert" else
                ["images_per_s_training", "images_per_s_steady", "images_per_s_all_epochs",
                 "median_epoch_images_per_s"])
        for key in keys:
            values = [m[key] for m in members if m[key] is not None]
            row[key] = {"median": statistics.median(values), "mean": statistics.fmean(values),
                        "min": min(values), "max": max(values)} if values else None
        out.append(row)
    return out


def table(result):
    def number(value):
        return "n/a" if value is None else f"{value:.1f}"

    lines = []
    for run in result["runs"]:
        if run["benchmark"] == "bert":
            lines.append(f"{run['file']}: {run['counting']:6} blocks {run['blocks_completed']:2} "
                         f"{run['sequences_per_s']:10.1f} +- {run['sequences_per_s_halfwidth']:5.1f} seq/s "
                         f"{run['packs_per_s']:9.1f} packs/s")
        else:
            lines.append(f"{run['file']}: epochs {run['epochs']:2} S={run['iterations_per_step']} "
                         f"training {number(run['images_per_s_training']):>10} img/s  steady "
                         f"{number(run['images_per_s_steady']):>10} img/s  all epochs "
                         f"{number(run['images_per_s_all_epochs']):>10} img/s")
    for row in result["systems"]:
        heads = (["sequences_per_s", "packs_per_s"] if row["benchmark"] == "bert" else
                 ["images_per_s_training", "images_per_s_steady"])
        for head in heads:
            s = row[head] or dict.fromkeys(("median", "mean", "min", "max"))
            lines.append(f"{row['system']} ({row['runs']} runs) {head}: median {number(s['median'])} "
                         f"mean {number(s['mean'])} min {number(s['min'])} max {number(s['max'])}")
    return "\n".join(lines) + "\n"


def write_output(text, path):
    if path is None:
        sys.stdout.write(text)
        return
    if os.path.lexists(path):
        raise InputError(path, "--output", "output.exists", "already exists",
                         "choose a new path (results are never overwritten)")
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".mlperf_throughput.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.link(temporary, path)   # fails rather than replace a file made meanwhile
    finally:
        os.unlink(temporary)


def analyse(sources, options):
    overrides = {k: getattr(options, k, None) for k in
                 ("logs_per_epoch", "batches_per_step", "epochs_per_ckpt", "ckpt_epochs_offset")}
    runs = []
    for label, text in sources:
        events = parse_mllog(text, label)
        benchmark = point(events, "submission_benchmark", label, kind=str, required=False)
        benchmark = options.benchmark or benchmark
        if benchmark == "bert":
            runs.append(bert_run(events, label, options.counting, options.avg_seq_per_pack,
                                 options.seq_per_pack))
        elif benchmark == "resnet":
            runs.append(resnet_run(events, label, overrides))
        else:
            raise InputError(label, "key submission_benchmark", "mllog.benchmark",
                             f"{benchmark!r}", "only bert and resnet are derived; pass --benchmark")
    return {"runs": runs, "systems": summarise(runs)}


# ---------------------------------------------------------------- self-test

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "mlperf")


def self_test():
    def options(**kw):
        base = dict(counting="auto", avg_seq_per_pack=AVG_SEQ_PER_PACK,
                    seq_per_pack=DATASET_SEQ_PER_PACK, benchmark=None, logs_per_epoch=None,
                    batches_per_step=None, epochs_per_ckpt=None, ckpt_epochs_offset=None)
        base.update(kw)
        return argparse.Namespace(**base)

    def load(name):
        path = os.path.join(FIXTURES, name)
        with open(path, encoding="utf-8") as handle:
            return [(path, handle.read())]

    def close(a, b):
        return a is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b))

    failures = []

    def check(what, got, want):
        if not close(got, want):
            failures.append(f"{what}: got {got!r}, hand-computed {want!r}")

    # Global counting (pod128): G=6144, I=200000; K = 33, 66, 98 -> blocks 2,3 hold 33 and 32
    # steps of 3072 packs; train_samples 602112 = 98 x 3072 x 2.0 -> r = 2.0 exactly.
    # Blocks 2..3: 199680 packs, 399360 sequences in 20 s + 16 s.
    run = analyse(load("bert_global/result_0.txt"), options())["runs"][0]
    check("bert global steps", [r["steps"] for r in run["blocks"]] == [33, 33, 32], True)
    check("bert global seq/pack", run["seq_per_pack"], 2.0)
    check("bert global seq/s", run["sequences_per_s"], 399360 / 36)
    check("bert global packs/s", run["packs_per_s"], 199680 / 36)
    check("bert global median block", run["median_block_sequences_per_s"],
          (33 * 6144 / 20 + 32 * 6144 / 16) / 2)
    # Local counting (pod16): G=3072, I=175000, train_samples 526000, r given as 2.0 so one
    # step is c = 1536 x 2.0 = 3072 sequences; blocks 2..3 hold 526000 - 175000 - 1536 =
    # 349464 +- 1536 sequences (174732 packs) in 50 s + 50 s.
    run = analyse(load("bert_local/result_0.txt"), options(seq_per_pack=2.0))["runs"][0]
    check("bert local seq/s", run["sequences_per_s"], 349464 / 100)
    check("bert local halfwidth", run["sequences_per_s_halfwidth"], 1536 / 100)
    check("bert local packs/s", run["packs_per_s"], 174732 / 100)
    check("bert local block 2", run["blocks"][1]["sequences_per_s"], 175000 / 50)
    # ResNet: G=5120, 5 epochs, logs_per_epoch 5, batches_per_step 1000 -> S = 250 // 5 = 50
    # iterations per step; 1281167 x 5 // 5120 = 1251 iterations = 26 steps. Epoch e+1 starts
    # at the first step s with (s+1) x 256000 >= e x 1281167: steps 5, 10, 15, 20, so epochs
    # 1-4 hold 5 steps (1280000 images) and epoch 5 holds 6 (1536000). Checkpoints (every 4
    # epochs from offset 1 = 250 iterations): after step 4 (epoch 1); the one due at iteration
    # 1250 (step 24) is dropped as "early" (round(epoch) = 5 and 1250 < 1251); after the last
    # step 25 (epoch 5). Evaluations logged at epochs 1 and 5. Epochs 2..5 take 21, 20, 20, 27 s.
    flags = dict(logs_per_epoch=5, batches_per_step=1000, epochs_per_ckpt=4, ckpt_epochs_offset=1)
    run = analyse(load("resnet/result_0.txt"), options(**flags))["runs"][0]
    check("resnet iterations/step", run["iterations_per_step"], 50)
    check("resnet steps", [r["steps"] for r in run["epoch_rows"]] == [5, 5, 5, 5, 6], True)
    check("resnet checkpoint epochs", run["checkpoint_epochs"] == [1, 5], True)
    check("resnet evals match", run["eval_epochs_match_checkpoints"], True)
    check("resnet all epochs", run["images_per_s_all_epochs"], 5376000 / 88)
    check("resnet training", run["images_per_s_training"], 3840000 / 61)
    check("resnet steady", run["images_per_s_steady"], 2560000 / 40)
    check("resnet median epoch", run["median_epoch_images_per_s"], (1280000 / 20 + 1280000 / 21) / 2)
    # The schedule of a real submission (v1.1 POD64, rule R4): S = 333 // 5 = 66 and epochs 19
    # and 37 hold 6 steps, the others 5 (epoch 38 too, after the overshooting last step).
    per_step, epoch_of_step, ckpts = resnet_schedule(1281167, 3840, 38, 5, 1000, 4, 2)
    six = [e for e in range(1, 39) if epoch_of_step.count(e) == 6]
    check("v1.1 POD64 six-step epochs", six == [19, 37, 38], True)
    check("v1.1 POD64 first checkpoint step", ckpts[0], 10)
    # ten checkpoints (10 evaluations are logged): at the epoch-2 boundary and every 4 epochs
    # after it; the one due at the epoch-38 boundary is dropped ("avoid early checkpointing")
    # for the one after the last step
    check("v1.1 POD64 checkpoints", len(ckpts), 10)
    # Bad input is refused with a rule id.
    for name, rule in (("bert_unmatched/result_0.txt", "mllog.blocks"),
                       ("bert_bad_trigger/result_0.txt", "bert.triggers")):
        try:
            analyse(load(name), options())
            failures.append(f"{name}: accepted, expected [{rule}]")
        except InputError as err:
            if f"[{rule}]" not in str(err):
                failures.append(f"{name}: {err} (expected [{rule}])")
    for failure in failures:
        print("FAIL", failure)
    print("self-test:", "failed" if failures else "passed")
    return 1 if failures else 0


# ---------------------------------------------------------------- command line

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", help="result_N.txt files or folders holding them")
    parser.add_argument("--repo", help="git directory of a training_results_v* repository")
    parser.add_argument("--system", action="append",
                        help="Graphcore/results/<system> to read from --repo (repeatable; all if omitted)")
    parser.add_argument("--benchmark", choices=["bert", "resnet"])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--output", help="write to this new file (atomically) instead of stdout")
    parser.add_argument("--counting", choices=["auto", "global", "local"], default="auto",
                        help="BERT trigger counting (rule B3)")
    parser.add_argument("--avg-seq-per-pack", type=int, default=AVG_SEQ_PER_PACK)
    parser.add_argument("--seq-per-pack", type=float, default=DATASET_SEQ_PER_PACK,
                        help="actual sequences per pack for local-counting runs (rule B4)")
    parser.add_argument("--logs-per-epoch", type=int,
                        help="ResNet logs_per_epoch of the config (rule R2; known submissions need none of these)")
    parser.add_argument("--batches-per-step", type=int, help="ResNet batches_per_step (rule R2)")
    parser.add_argument("--epochs-per-ckpt", type=int,
                        help="ResNet epochs_per_ckpt (rule R5, default 4; 0: no checkpoints)")
    parser.add_argument("--ckpt-epochs-offset", type=int,
                        help="ResNet ckpt_epochs_offset (rule R5; default: epochs %% epochs_per_ckpt, the v2.0 rule)")
    parser.add_argument("--self-test", action="store_true")
    options = parser.parse_args(argv)
    if options.self_test:
        return self_test()
    if options.repo and not options.benchmark:
        parser.error("--repo needs --benchmark")
    if not options.repo and not options.paths:
        parser.error("give result files, folders, or --repo")
    if not 1.0 <= options.seq_per_pack <= 3.0 or not 1 <= options.avg_seq_per_pack <= 3:
        parser.error("sequences per pack lie in [1, 3] (max_sequences_per_pack is 3)")
    for name in ("logs_per_epoch", "batches_per_step"):
        if getattr(options, name) is not None and getattr(options, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    try:
        result = analyse(gather_sources(options), options)
        write_output(json.dumps(result, indent=1, sort_keys=True) + "\n" if options.json
                     else table(result), options.output)
    except InputError as err:
        print(f"mlperf_throughput: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
