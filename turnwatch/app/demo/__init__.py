"""`turnwatch demo`: the whole pipeline on embedded defaults, fed by a simulated support chatbot.

`scripts` holds the conversations, `chatbot` plays them as real OTel GenAI spans, `observer`
collects the score records, `run` drives it all and `summary` prints what turnwatch found.
"""
