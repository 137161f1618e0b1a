"""Published weights into glassformer's own modules: Whisper (HF, CTranslate2)."""
