"""Prompts rebuilt from logged calls: K3's rendering of a message (`chat_format`), token counts by Kimi's BPE or an
estimate (`tokenizer`), calls made into prompts of parts with an identity each (`build`), and logged usage made into
the size of every part (`calibrate`)."""
