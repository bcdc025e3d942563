"""DeepSpeed's pipeline engine as the step-time engine runs it (steptime.Layout(deepspeed_pipeline=True)).

The schedule below is DeepSpeed's own TrainSchedule (deepspeed/runtime/pipe/schedule.py, v0.5, October 2021, the
version MT-NLG and BigScience trained with; unchanged in its step-to-micro-batch map since v0.3.0): step t of stage s
runs a forward or a backward pass by the parity of t and s, each step first exchanges with one neighbour
(RecvActivation + SendGrad with the previous stage before a forward pass, SendActivation + RecvGrad with the next
before a backward pass), and each transfer is "blocking and must be paired" (the instructions' docstrings): a
send and its receive start together, when the later of the two stages reaches it. A max-plus run of that program
gives the step the engine's closed form must match.
"""

import pytest

from mlcalc import models, plan, steptime, training_runs


def _train_schedule(p, m, s):
    """Stage s's commands, step by step, as schedule.py's TrainSchedule.steps() yields them."""
    out, prev = [], -1
    for t in range(2 * (m + p - 1)):
        if t % 2 == s % 2:  # _even_step_forward_id / _odd_step_forward_id
            fwd, mb = True, (t // 2 if t % 2 == 0 else (t - 1) // 2) - s // 2
        elif t % 2 == 0:  # _even_step_backward_id
            fwd, mb = False, t // 2 - p + (s + 1) // 2
        else:  # _odd_step_backward_id
            fwd, mb = False, (t - 1) // 2 - p + 1 + s // 2
        ok, prev_ok = 0 <= mb < m, 0 <= prev < m
        cmds = []
        if fwd and s > 0:
            cmds += [("recv_act", s - 1, mb)] if ok else []
            cmds += [("send_grad", s - 1, prev)] if prev_ok else []
        elif not fwd and s < p - 1:
            cmds += [("send_act", s + 1, prev)] if prev_ok else []
            cmds += [("recv_grad", s + 1, mb)] if ok else []
        if ok:
            cmds.append(("F" if fwd else "B", None, mb))
        prev = mb
        out += cmds
    return out


_PAIR = {"recv_act": "send_act", "send_act": "recv_act", "send_grad": "recv_grad", "recv_grad": "send_grad"}


def _run(p, m, tf, tb, c):
    """The step's wall time: passes of tf and tb; every transfer takes c on both stages from the later arrival."""
    prog = [_train_schedule(p, m, s) for s in range(p)]
    pc, clock = [0] * p, [0.0] * p
    while any(pc[s] < len(prog[s]) for s in range(p)):
        moved = False
        for s in range(p):
            while pc[s] < len(prog[s]):
                kind, peer, mb = prog[s][pc[s]]
                if kind in ("F", "B"):
                    clock[s] += tf if kind == "F" else tb
                elif pc[peer] < len(prog[peer]) and prog[peer][pc[peer]] == (_PAIR[kind], s, mb):
                    clock[s] = clock[peer] = max(clock[s], clock[peer]) + c
                    pc[peer] += 1
                else:
                    break
                pc[s] += 1
                moved = True
        assert moved, "the schedule deadlocked"
    return max(clock)


@pytest.mark.parametrize("p,m", [(2, 8), (3, 8), (4, 32), (12, 128), (35, 40)])
def test_train_schedule_is_1f1b_and_its_transfers_on_the_critical_path(p, m):
    tf, tb, c = 1.0, 3.0, 0.01
    # no transfer time: the 1F1B bubble, (p - 1) of the m micro-batches' time (Narayanan et al. 2021, 2.2.1)
    assert _run(p, m, tf, tb, 0.0) == pytest.approx((m + p - 1) * (tf + tb))
    # the blocking transfers on the critical path: 4 per micro-batch on a middle stage, and 2 (p - 4) more in the
    # fill and drain; two stages: 2 per micro-batch (steptime.predict_step's count)
    sends = 4 * m + 2 * (p - 4) if p > 2 else 2 * m
    assert _run(p, m, tf, tb, c) == pytest.approx((m + p - 1) * (tf + tb) + sends * c)


def _bloom():
    return training_runs.runs()["BLOOM 176B (384 A100)"]


def test_engine_charges_the_schedule_count_of_transfers():
    e = _bloom()
    model, lay = training_runs.model_of(e), training_runs.layout_of(e)
    assert lay.deepspeed_pipeline and lay.pp == 12 and lay.tp == 4
    p = steptime.predict_step(model, lay, seq_len=2048, machine="A100-80GB", engine="megatron")
    act = lay.micro_batch * 2048 * model.hidden * steptime.ACTIVATION_BYTES
    sysk = steptime.default_system("A100-80GB")
    send = steptime._p2p_s(act / lay.tp, steptime._fabric_of(sysk, 2, lay.tp * lay.dp, 8))
    gather = steptime._collective_s(act, steptime._fabric_of(sysk, lay.tp, 1, 8), "all_gather")
    m, pp = lay.grad_accum, lay.pp
    per_mb_sends = 4 * send + 3 * gather
    busy = (p.parts_s["forward (kernels and host)"] + p.parts_s["backward (kernels and host)"]
            + p.parts_s["tensor-parallel collectives"]) / m
    # the bubble: (p - 1) micro-batches' passes and gathers, and the fill and drain's 2 (p - 4) transfers
    assert p.bubble_s == pytest.approx((pp - 1) * (busy + 3 * gather) + 2 * (pp - 4) * send)
    tied = p.parts_s["pipeline sends"] - m * per_mb_sends
    assert tied > 0 and model.tied_embeddings  # BLOOM ties its embedding: reduced between stage 0 and 11 after the flush
    # after the flush nothing hides the data-parallel reduction and ZeRO-1's gather: all of it is exposed
    tot, exposed = p.comm_parts_s["data"]
    assert exposed == pytest.approx(tot) and p.parts_s["data-parallel reduction (exposed)"] == pytest.approx(tot)
    assert any("DeepSpeed's pipeline engine" in n for n in p.notes)


def test_partitioned_sends_are_smaller_than_whole_activations():
    e = _bloom()
    model, lay = training_runs.model_of(e), training_runs.layout_of(e)
    ds = steptime.predict_step(model, lay, seq_len=2048, machine="A100-80GB", engine="megatron")
    whole = steptime.predict_step(model, steptime.Layout(**dict(e["layout"], deepspeed_pipeline=False)), seq_len=2048,
                                  machine="A100-80GB", engine="megatron")
    assert ds.comm_parts_s["pipeline"][0] < whole.comm_parts_s["pipeline"][0]


# BigScience 2022 (BLOOM), 3.4: Megatron-DeepSpeed, DeepSpeed's pipeline with ZeRO-1, TP 4 x PP 12 x DP 8 on 384
# A100 80GB, 156 TFLOP/s per GPU: the DeepSpeed rules keep it within the 15%.
def test_bloom_on_deepspeeds_pipeline_within_15_percent_of_156_tflops():
    c = training_runs.check("BLOOM 176B (384 A100)")
    assert c.published == 156
    assert abs(c.error) <= training_runs.TOLERANCE


def test_every_run_that_names_deepspeeds_pipeline_runs_it():
    for name, e in training_runs.runs().items():
        ds = name.startswith(("MT-NLG", "BLOOM", "GPT-NeoX"))  # Smith et al. 2022, BigScience 2022, Black et al. 2022
        assert training_runs.layout_of(e).deepspeed_pipeline == ds, name
    # the planner's published runs with a stated layout: BLOOM (Megatron-DeepSpeed) is the one
    for name, e in plan.published_runs().items():
        assert (e.get("layout") or {}).get("deepspeed_pipeline", False) == (name == "BLOOM 176B"), name
    e = plan.published_runs()["BLOOM 176B"]
    lay = plan.layout_as_run(plan.run_model(dict(e, name="BLOOM 176B")), e["chip"], e["gpus"], e["seq_len"],
                             e["global_batch_tokens"], e["layout"])
    off = plan.layout_as_run(plan.run_model(dict(e, name="BLOOM 176B")), e["chip"], e["gpus"], e["seq_len"],
                             e["global_batch_tokens"], dict(e["layout"], deepspeed_pipeline=False))
    assert lay.step_s != off.step_s


def test_bad_deepspeed_pipeline():
    with pytest.raises(ValueError, match="deepspeed_pipeline"):
        steptime.Layout(deepspeed_pipeline="yes")
    with pytest.raises(ValueError, match="deepspeed_pipeline"):
        steptime.Layout(pp=4, schedule="interleaved", virtual_stages=2, deepspeed_pipeline=True)
    with pytest.raises(ValueError, match="deepspeed_pipeline"):
        steptime.Layout(pp=2, dp=2, zero=3, deepspeed_pipeline=True)
    # one stage: no pipeline, nothing changes
    m = models.preset("Llama-3 8B")
    a, b = (steptime.predict_step(m, steptime.Layout(dp=2, zero=1, deepspeed_pipeline=f), seq_len=2048,
                                  machine="A100-80GB", engine="megatron").step_s for f in (True, False))
    assert a == b
