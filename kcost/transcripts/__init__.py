"""The transcript side: model calls as logs record them, and the prompts they become.

`calls` (the common currency of the readers), `usage` (one parser for every provider's usage fields),
`chat_format` (K3's rendering of a message), `tokenizer` (Kimi's BPE or an estimate), `prompts` (calls ->
prompts as parts with an identity each) and `calibrate` (logged usage -> the size of every part).
"""
