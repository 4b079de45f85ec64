// afkit image validation: a program compiled in the image with the toolchain's c++ against ROOT
// (root-config --cflags --libs) opens a real ROOT file and reads a branch, like read_tree.C.
// Usage: read_tree FILE_OR_URL TREE BRANCH
#include <iostream>
#include <memory>

#include "TFile.h"
#include "TTree.h"

int main(int argc, char **argv)
{
   if (argc != 4) {
      std::cerr << "usage: read_tree FILE_OR_URL TREE BRANCH" << std::endl;
      return 2;
   }
   std::unique_ptr<TFile> file(TFile::Open(argv[1]));
   if (!file || file->IsZombie()) {
      std::cerr << "afkit-proof: cannot open " << argv[1] << std::endl;
      return 1;
   }
   auto *t = file->Get<TTree>(argv[2]);
   if (!t) {
      std::cerr << "afkit-proof: no tree " << argv[2] << " in " << argv[1] << std::endl;
      return 1;
   }
   Int_t value = 0;
   if (t->SetBranchAddress(argv[3], &value) < 0) {
      std::cerr << "afkit-proof: no Int_t branch " << argv[3] << " in " << argv[2] << std::endl;
      return 1;
   }
   Long64_t sum = 0;
   const Long64_t entries = t->GetEntries();
   for (Long64_t i = 0; i < entries; ++i) {
      t->GetEntry(i);
      sum += value;
   }
   std::cout << "afkit-proof: " << argv[2] << " " << entries << " entries, sum of " << argv[3] << " " << sum << " ("
             << file->ClassName() << ")" << std::endl;
   return 0;
}
