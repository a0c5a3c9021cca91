"""The models of benchmarks/bench_zoo.py: PyTorch's dashboard lists.

The TIMM and HuggingFace lists of PyTorch's own benchmark suite
(`benchmarks/dynamo/timm_models_list.txt` and
`huggingface_models_list.txt` in the PyTorch repository, with their batch
sizes), built with random weights and no download: `timm.create_model(name,
pretrained=False)`, and `transformers` model classes from their config
classes' defaults (the published sizes written out for the hub-named
models). A model whose parameters would not fit the backends' copies on one
GPU runs with fewer layers, and its row says so (`layers`).
"""

from __future__ import annotations

#: TIMM: name -> batch (the list's).
TIMM = {
    "adv_inception_v3": 128, "beit_base_patch16_224": 128,
    "convnextv2_nano.fcmae_ft_in22k_in1k": 128,
    "deit_base_distilled_patch16_224": 128,
    "deit_tiny_patch16_224.fb_in1k": 128, "dm_nfnet_f0": 128,
    "ghostnet_100": 512, "inception_v3": 128, "mobilenetv2_100": 128,
    "mobilenetv3_large_100": 512, "mobilevit_s": 128, "nfnet_l0": 128,
    "repvgg_a2": 128, "swin_base_patch4_window7_224": 128,
    "tf_efficientnet_b0": 128, "visformer_small": 128,
    "vit_base_patch14_dinov2.lvd142m": 128,
    "vit_base_patch16_siglip_256": 128,
}

#: HuggingFace: list name -> (transformers class, batch, config overrides).
#: The hub-named models' configs are their published sizes.
HF = {
    "AlbertForMaskedLM": ("AlbertForMaskedLM", 8, {}),
    "AlbertForQuestionAnswering": ("AlbertForQuestionAnswering", 8, {}),
    "AllenaiLongformerBase": ("LongformerForMaskedLM", 8, {}),
    "BartForCausalLM": ("BartForCausalLM", 8, {}),
    "BartForConditionalGeneration": ("BartForConditionalGeneration", 4, {}),
    "BertForMaskedLM": ("BertForMaskedLM", 32, {}),
    "BertForQuestionAnswering": ("BertForQuestionAnswering", 32, {}),
    "BlenderbotForCausalLM": ("BlenderbotForCausalLM", 32, {}),
    "BlenderbotForConditionalGeneration":
        ("BlenderbotForConditionalGeneration", 16, {}),
    "BlenderbotSmallForCausalLM": ("BlenderbotSmallForCausalLM", 256, {}),
    "BlenderbotSmallForConditionalGeneration":
        ("BlenderbotSmallForConditionalGeneration", 128, {}),
    "CamemBert": ("CamembertForMaskedLM", 32, {}),
    "DebertaV2ForMaskedLM": ("DebertaV2ForMaskedLM", 8, {}),
    "DebertaV2ForQuestionAnswering": ("DebertaV2ForQuestionAnswering", 8, {}),
    "DistilBertForMaskedLM": ("DistilBertForMaskedLM", 256, {}),
    "DistilBertForQuestionAnswering":
        ("DistilBertForQuestionAnswering", 512, {}),
    "DistillGPT2": ("GPT2LMHeadModel", 32, {"n_layer": 6}),
    "ElectraForCausalLM": ("ElectraForCausalLM", 64, {"is_decoder": True}),
    "ElectraForQuestionAnswering": ("ElectraForQuestionAnswering", 128, {}),
    "GPT2ForSequenceClassification":
        ("GPT2ForSequenceClassification", 8, {"pad_token_id": 0}),
    "GPTJForCausalLM": ("GPTJForCausalLM", 1, {}),
    "GPTJForQuestionAnswering": ("GPTJForQuestionAnswering", 1, {}),
    "GPTNeoForCausalLM": ("GPTNeoForCausalLM", 32, {}),
    "GPTNeoForSequenceClassification":
        ("GPTNeoForSequenceClassification", 32, {"pad_token_id": 0}),
    "GoogleFnet": ("FNetForMaskedLM", 32, {}),
    "LayoutLMForMaskedLM": ("LayoutLMForMaskedLM", 32, {}),
    "LayoutLMForSequenceClassification":
        ("LayoutLMForSequenceClassification", 32, {}),
    "M2M100ForConditionalGeneration":
        ("M2M100ForConditionalGeneration", 64, {}),
    "MBartForCausalLM": ("MBartForCausalLM", 8, {}),
    "MBartForConditionalGeneration": ("MBartForConditionalGeneration", 4, {}),
    "MT5ForConditionalGeneration": ("MT5ForConditionalGeneration", 32, {}),
    "MegatronBertForCausalLM":
        ("MegatronBertForCausalLM", 16, {"is_decoder": True}),
    "MegatronBertForQuestionAnswering":
        ("MegatronBertForQuestionAnswering", 16, {}),
    "MobileBertForMaskedLM": ("MobileBertForMaskedLM", 256, {}),
    "MobileBertForQuestionAnswering":
        ("MobileBertForQuestionAnswering", 256, {}),
    "OPTForCausalLM": ("OPTForCausalLM", 4, {}),
    "PLBartForCausalLM": ("PLBartForCausalLM", 16, {}),
    "PLBartForConditionalGeneration":
        ("PLBartForConditionalGeneration", 8, {}),
    "PegasusForCausalLM": ("PegasusForCausalLM", 128, {}),
    "PegasusForConditionalGeneration":
        ("PegasusForConditionalGeneration", 64, {}),
    "RobertaForCausalLM": ("RobertaForCausalLM", 32, {"is_decoder": True}),
    "RobertaForQuestionAnswering": ("RobertaForQuestionAnswering", 32, {}),
    "T5ForConditionalGeneration": ("T5ForConditionalGeneration", 8, {}),
    "T5Small": ("T5ForConditionalGeneration", 8, {}),
    "TrOCRForCausalLM": ("TrOCRForCausalLM", 64, {}),
    "XGLMForCausalLM": ("XGLMForCausalLM", 32, {}),
    "XLNetLMHeadModel": ("XLNetLMHeadModel", 16, {}),
    "YituTechConvBert": ("ConvBertForMaskedLM", 32, {}),
    "meta-llama/Llama-3.2-1B": ("LlamaForCausalLM", 8, dict(
        hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
        rope_theta=500000.0, tie_word_embeddings=True)),
    "google/gemma-2-2b": ("Gemma2ForCausalLM", 8, {}),
    "google/gemma-3-4b-it": ("Gemma3ForCausalLM", 8, dict(
        hidden_size=2560, intermediate_size=10240, num_hidden_layers=34,
        num_attention_heads=8, num_key_value_heads=4, head_dim=256)),
    "openai/whisper-tiny": ("WhisperForConditionalGeneration", 8, {}),
    "Qwen/Qwen3-0.6B": ("Qwen3ForCausalLM", 8, dict(
        hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128,
        tie_word_embeddings=True)),
    "mistralai/Mistral-7B-Instruct-v0.3": ("MistralForCausalLM", 8,
                                           {"vocab_size": 32768}),
    "openai/gpt-oss-20b": ("GptOssForCausalLM", 8, {}),
}

#: Tokens per sequence (the model's own limit where it is lower).
SEQ_LEN = 512
#: CPU rows: images, and sequences x tokens (float32 inference).
CPU_BATCH, CPU_SEQ = 2, 128
#: Parameters a model may have, by mode (inference: a bf16 copy per backend
#: and a float32 reference; training: AdamW's float32 state per backend);
#: above, it runs with fewer layers. The CPU takes HF models under 1B.
MAX_PARAMS = {"infer": 4.0e9, "train": 1.2e9, "cpu": 1.0e9}


def names(suite: str) -> list[str]:
    """The list names of `suite` ("timm", "hf" or "all")."""
    return ((list(TIMM) if suite in ("timm", "all") else [])
            + (list(HF) if suite in ("hf", "all") else []))


def suite_of(name: str) -> str:
    return "timm" if name in TIMM else "huggingface"


class Skip(Exception):
    """A model this mode does not run (the CPU's HF models over 1B)."""


class Built:
    """A built model: the module, its inputs (keyword arguments), what its
    loss needs beyond them, and notes for its row."""

    def __init__(self, model, inputs: dict, labels: dict, notes: dict):
        self.model, self.inputs, self.labels, self.notes = (
            model, inputs, labels, notes)


def _zero_dropout(cfg) -> None:
    for key, value in list(cfg.to_dict().items()):
        if (("dropout" in key or "pdrop" in key or key == "drop_path_rate")
                and isinstance(value, float)):
            setattr(cfg, key, 0.0)


def _layer_key(cfg) -> str | None:
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        if isinstance(getattr(cfg, key, None), int):
            return key
    return None


def _count_params(cls, cfg) -> int:
    import torch
    with torch.device("meta"):
        model = cls(cfg)
    return sum(p.numel() for p in model.parameters())


def _set_layers(cfg, key: str, layers: int) -> None:
    """At most `layers` layers in the encoder and the decoder alike (a
    seq2seq config's `num_hidden_layers` names its encoder's only, and a
    decoder used alone keeps a cache of that many layers)."""
    setattr(cfg, key, layers)
    for other in ("decoder_layers", "encoder_layers", "num_decoder_layers"):
        if isinstance(getattr(cfg, other, None), int):
            setattr(cfg, other, min(getattr(cfg, other), layers))


def _fit(cls, cfg, limit: float, notes: dict) -> None:
    """Fewer layers (encoder and decoder alike) until `cls(cfg)` has at
    most `limit` parameters."""
    key = _layer_key(cfg)
    count = _count_params(cls, cfg)
    if key is None or count <= limit:
        notes["params"] = count
        return
    full = getattr(cfg, key)
    layers = full
    while layers > 1 and count > limit:
        layers = max(1, layers * 3 // 4)
        _set_layers(cfg, key, layers)
        count = _count_params(cls, cfg)
    notes["params"] = count
    notes["layers"] = f"{layers} of {full}"


def _positions(model, seq: int) -> int:
    """How many tokens `model`'s position table holds: an embedding of
    positions with a padding index counts from just after it (RoBERTa's
    family: 512 positions of a 514-row table; the config class's default
    table has 512 rows, so 510 tokens)."""
    import torch
    for name, module in model.named_modules():
        if (name.endswith("position_embeddings")
                and isinstance(module, torch.nn.Embedding)
                and module.padding_idx is not None):
            return module.num_embeddings - module.padding_idx - 1
    return seq


def _timm_model(timm, name: str, dropout: bool):
    """timm's model `name`, with its dropout and drop-path rates set to 0
    unless `dropout`: as keyword arguments where its constructor takes
    them (GhostNet's and Inception-v3's take no drop-path rate), and on
    its modules too."""
    if dropout:
        return timm.create_model(name, pretrained=False)
    import torch
    for kwargs in ({"drop_rate": 0.0, "drop_path_rate": 0.0},
                   {"drop_rate": 0.0}, {}):
        try:
            model = timm.create_model(name, pretrained=False, **kwargs)
            break
        except TypeError:
            continue
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        for attr in ("drop_rate", "drop_prob"):
            if isinstance(getattr(module, attr, None), float):
                setattr(module, attr, 0.0)
    return model


def build(name: str, mode: str, device, dtype, dropout: bool = True,
          small: bool = False) -> Built:
    """Model `name` for `mode` ("infer", "train" or "cpu"), seeded, with its
    config's own dropout unless `dropout` is False."""
    import torch
    torch.manual_seed(0)
    cpu = mode == "cpu"
    if name in TIMM:
        import timm
        model = _timm_model(timm, name, dropout)
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))
        batch = CPU_BATCH if cpu else (4 if small else TIMM[name])
        x = torch.randn(batch, *size)
        notes = {"batch": batch, "input": list(size),
                 "params": sum(p.numel() for p in model.parameters())}
        # A feature extractor (num_classes 0: DINOv2's, SigLIP's) returns
        # its pooled features; training reads them as logits.
        classes = model.num_classes or model.num_features
        labels = {"target": torch.randint(0, classes, (batch,))}
        model = model.to(device, dtype)
        return Built(model, {"x": x.to(device, dtype)},
                     {k: v.to(device) for k, v in labels.items()}, notes)
    import transformers
    class_name, batch, overrides = HF[name]
    cls = getattr(transformers, class_name)
    cfg = cls.config_class(**overrides)
    if not dropout:
        _zero_dropout(cfg)
    notes: dict = {}
    if small:
        _set_layers(cfg, _layer_key(cfg) or "num_hidden_layers", 2)
    if cpu:
        notes["params"] = _count_params(cls, cfg)
        if notes["params"] > MAX_PARAMS["cpu"]:
            raise Skip(f"{notes['params'] / 1e9:.1f}B parameters")
    else:
        _fit(cls, cfg, MAX_PARAMS[mode], notes)
    limit = getattr(cfg, "max_position_embeddings", None)
    seq = CPU_SEQ if cpu else (64 if small else SEQ_LEN)
    if isinstance(limit, int) and limit > 0:
        seq = min(seq, limit)
    batch = CPU_BATCH if cpu else (2 if small else batch)
    model = cls(cfg)
    seq = min(seq, _positions(model, seq))
    notes.update(batch=batch, seq=seq)
    vocab = cfg.vocab_size
    ids = torch.randint(1, vocab, (batch, seq))
    inputs: dict = {"input_ids": ids}
    labels: dict = {}
    if class_name.startswith("Whisper"):
        frames = 2 * cfg.max_source_positions
        inputs = {"input_features": torch.randn(batch, cfg.num_mel_bins,
                                                frames),
                  "decoder_input_ids":
                      ids[:, :min(seq, cfg.max_target_positions)]}
        labels = {"labels": inputs["decoder_input_ids"]}
    elif class_name.endswith("ForConditionalGeneration"):
        inputs["decoder_input_ids"] = ids
        labels = {"labels": ids}
    elif class_name.endswith("ForQuestionAnswering"):
        labels = {"start_positions": torch.randint(0, seq, (batch,)),
                  "end_positions": torch.randint(0, seq, (batch,))}
    elif class_name.endswith("ForSequenceClassification"):
        labels = {"labels": torch.randint(0, cfg.num_labels, (batch,))}
    else:
        labels = {"labels": ids}
    model = model.to(device, dtype)
    inputs = {k: v.to(device) if v.is_floating_point() is False
              else v.to(device, dtype) for k, v in inputs.items()}
    return Built(model, inputs, {k: v.to(device) for k, v in labels.items()},
                 notes)


def loss(name: str, model, built: Built):
    """The training loss of a built model (the caller sets autocast)."""
    import torch.nn.functional as F
    if name in TIMM:
        return F.cross_entropy(model(built.inputs["x"]),
                               built.labels["target"])
    return model(**built.inputs, **built.labels).loss


def output(name: str, model, built: Built):
    """The tensor an inference step is compared by."""
    if name in TIMM:
        return model(built.inputs["x"])
    out = model(**built.inputs)
    return out.to_tuple()[0] if hasattr(out, "to_tuple") else out
