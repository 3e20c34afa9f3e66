# Copyright (C) 2024 Apple Inc. All Rights Reserved.
IGNORE_INDEX: int = -100
